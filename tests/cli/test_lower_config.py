"""``amkspec lower --config`` judges a document exactly as the knob checks, the JSON Schema and
``evaluate`` do (the search guide, "The knobs"; the lowering guide, "Command line"): same accepted
documents, and a refusal is the knob issue (``knob:type``...), exit 2."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings

from amkspec import dumps
from amkspec.cli import main
from amkspec.ir import TARGETS
from amkspec.lower import knobs, lower
from amkspec.search import evaluate
from tests.search.strategies import config_documents

TARGET = "rtx5090"
SCHEMA = jsonschema.Draft202012Validator(knobs.config_schema())

DOCUMENTS: list[dict[str, Any]] = [
    {"tiling": {"gemv": {"N_tile": 64.0}}},
    {"sm_assignment": {"00": 1}},
    {"sm_assignment": {"-0": 1}},
    {"sm_assignment": {"12": 3}},
    {"tiling": {"gemv": {"N_tile": True}}},
    {"tiling": {"gemv": {"N_tile": 1.5}}},
    {"pipelining_depth": "deep"},
    {"pipelining_depth": 8.0, "threads_per_block": 128.0},
    {"fusion_grouping": [["gate", "up", "silu"]], "page_allocation": "linear"},
    {"page_allocation": "NONE"},
]


def _lower_cli(doc: Any, tmp_path: Path) -> tuple[int, str, str]:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["lower", "toy", "--target", TARGET, "--config", str(cfg)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("doc", DOCUMENTS, ids=json.dumps)
def test_lower_schema_checks_and_evaluate_agree(doc: dict[str, Any], tmp_path: Path) -> None:
    issues = knobs.check(doc, TARGETS[TARGET])
    code, _, err = _lower_cli(doc, tmp_path)
    verdict = evaluate("toy", TARGET, doc)
    assert SCHEMA.is_valid(doc) == (issues == []) == (code == 0) == verdict.valid
    if issues:
        assert code == 2 and err.count("\n") == 1
        assert f"{issues[0].code} {issues[0].path}" in err
        assert verdict.rejected_reason is not None and issues[0].code in verdict.rejected_reason
        with pytest.raises(knobs.ConfigError):
            lower("toy", TARGET, doc)


def test_a_config_is_lowered_as_the_checks_build_it(tmp_path: Path) -> None:
    code, out, _ = _lower_cli({"tiling": {"gemv": {"N_tile": 64.0}}, "sm_assignment": {"12": 3}}, tmp_path)
    want = lower("toy", TARGET, {"tiling": {"gemv": {"N_tile": 64}}, "sm_assignment": {12: 3}})
    assert code == 0 and out.strip() == dumps(want)


@settings(max_examples=40, deadline=None)
@given(config_documents())
def test_lower_refuses_exactly_what_the_checks_refuse(doc: Any) -> None:
    """Any document (a program's ``config`` aside): exit 0 iff the knob checks pass, else exit 2."""
    assume(isinstance(doc, dict) and "tasks" not in doc)
    with tempfile.TemporaryDirectory() as tmp:
        code, _, err = _lower_cli(doc, Path(tmp))
    issues = knobs.check(doc, TARGETS[TARGET])
    assert code == (0 if not issues else 2), err
