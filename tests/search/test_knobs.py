"""The knob space (amkspec.lower.knobs): checks, schema, ids, the lowering's refusals (issue 12 item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from amkspec.cli import main
from amkspec.ir import TARGETS, ScheduleConfig
from amkspec.lower import LoweringError, knobs, lower
from amkspec.lower.knobs import ConfigError
from tests.search.strategies import config_documents

H100 = TARGETS["h100"]


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_schedule_ids_match_the_original_test_vectors() -> None:
    """OPS_FACTS §14.3: default_config() and ScheduleConfig() hash as the original's do."""
    assert knobs.schedule_id(knobs.default_config()) == "sch_c3af28020e"
    assert knobs.schedule_id(ScheduleConfig()) == "sch_d74fe3be8d"
    assert knobs.schedule_id(None) == "sch_c3af28020e"
    assert knobs.schedule_id(knobs.config_dict(knobs.default_config())) == "sch_c3af28020e"


@pytest.mark.parametrize(("doc", "code", "path"), [
    ({"tiling": 5}, knobs.TYPE, "tiling"),
    ({"tiling": {"gemv": {"N_tile": 0}}}, knobs.RANGE, "tiling.gemv.N_tile"),
    ({"tiling": {"gemv": {"N_tile": -64}}}, knobs.RANGE, "tiling.gemv.N_tile"),
    ({"tiling": {"gemv": {"N_tile": True}}}, knobs.TYPE, "tiling.gemv.N_tile"),
    ({"tiling": {"gemv": {"N_tile": 10**5000}}}, knobs.RANGE, "tiling.gemv.N_tile"),
    ({"tiling": {"gemv": {"M_tile": 4}}}, knobs.UNKNOWN, "tiling.gemv.\"M_tile\""),
    ({"tiling": {"mlp": {}}}, knobs.UNKNOWN, "tiling.mlp"),
    ({"pipelining_depth": "deep"}, knobs.TYPE, "pipelining_depth"),
    ({"pipelining_depth": 9}, knobs.RANGE, "pipelining_depth"),
    ({"page_allocation": "buddy"}, knobs.RANGE, "page_allocation"),
    ({"sm_assignment": {"0": 132}}, knobs.RANGE, "sm_assignment.\"0\""),
    ({"sm_assignment": {"x": 1}}, knobs.TYPE, "sm_assignment.\"x\""),
    ({"fusion_grouping": [["gate"]]}, knobs.RANGE, "fusion_grouping[0]"),
    ({"warp_specialize": True}, knobs.UNKNOWN, "warp_specialize"),
    ({"threads_per_block": 48}, "O503", "threads_per_block"),
    ({"threads_per_block": 2048}, "O503", "threads_per_block"),
    ({"smem_bytes_per_block": H100.smem_bytes_per_block_optin + 1}, "O504", "smem_bytes_per_block"),
    ({"smem_bytes_per_block": -1}, "O504", "smem_bytes_per_block"),
    ([1, 2], knobs.TYPE, "(root)"),
])
def test_each_kind_of_bad_knob_is_one_issue_with_its_path(doc: Any, code: str, path: str) -> None:
    issues = knobs.check(doc, H100)
    assert [(i.code, i.path) for i in issues] == [(code, path)]


def test_integral_numbers_are_integers_as_in_json_schema() -> None:
    """JSON Schema calls 64.0 an integer; so do the checks (it builds as 64, with the same id)."""
    doc = {"tiling": {"gemv": {"N_tile": 64.0}, "attention": {"kv_block": 128}}, "threads_per_block": 256.0}
    config, issues = knobs.parse(doc, H100)
    assert issues == [] and config is not None and config.tiling["gemv"]["N_tile"] == 64
    assert isinstance(config.threads_per_block, int)
    assert knobs.schedule_id(doc) == "sch_c3af28020e"
    assert [i.code for i in knobs.check({"pipelining_depth": 2.5}, H100)] == [knobs.TYPE]


def test_launch_issues_are_the_validators_own_findings() -> None:
    """O503/O504 come from amkspec.validate itself, so knobs and validator cannot disagree."""
    from amkspec.proofs import validate

    cfg = ScheduleConfig(threads_per_block=96 + 8, smem_bytes_per_block=10**6)
    prog = lower("toy", "h100", ScheduleConfig(), compat=True)
    prog.config = cfg
    from_validator = {(d.code, d.message) for d in validate(prog).diagnostics if d.code in ("O503", "O504")}
    from_knobs = {(i.code, i.message) for i in knobs.check(cfg, H100)}
    assert from_knobs == from_validator and len(from_knobs) == 2


@given(config_documents())
def test_schema_accepts_exactly_the_documents_the_checks_accept_without_a_target(doc: Any) -> None:
    """One knob table, two renderings: the JSON Schema and check() agree (target caps aside).

    (None is the Python API's "default config", not a document.)"""
    assume(doc is not None)
    schema_ok = jsonschema.Draft202012Validator(knobs.config_schema()).is_valid(doc)
    assert schema_ok == (knobs.check(doc, None) == [])


def test_config_schema_is_a_valid_draft_2020_12_schema() -> None:
    code, out, _ = _invoke("schema", "--config")
    assert code == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == knobs.config_schema()
    assert set(schema["properties"]) == set(knobs.TOP_LEVEL)


def test_propose_prints_the_space_with_the_targets_real_caps() -> None:
    code, out, _ = _invoke("propose", "toy-2L", "--target", "rtx5090")
    assert code == 0
    doc = json.loads(out)
    cap = TARGETS["rtx5090"].smem_bytes_per_block_optin
    smem = doc["search_space"]["smem_bytes_per_block"]
    assert smem["range"] == [0, cap] and max(smem["choices"]) == cap
    assert doc["caps"]["num_sms"] == TARGETS["rtx5090"].num_sms
    assert doc["schedule_id"] == "sch_c3af28020e"
    from amkspec.search.space import default_document, put

    for path, knob in doc["search_space"].items():
        for choice in knob["choices"]:
            assert knobs.check(put(default_document(), path, choice), TARGETS["rtx5090"]) == [], path


@pytest.mark.parametrize("config", [
    ScheduleConfig(tiling={"gemv": {"N_tile": 0}}),
    ScheduleConfig(tiling={"gemv": {"N_tile": -8}}),
    ScheduleConfig(tiling={"attention": {"n_partitions": 0}}),
    ScheduleConfig(pipelining_depth=-1),
    ScheduleConfig(smem_bytes_per_block=10**9),
])
def test_lower_refuses_bad_knobs_with_a_config_error(config: ScheduleConfig) -> None:
    with pytest.raises(ConfigError) as info:
        lower("toy", "h100", config)
    assert isinstance(info.value, LoweringError) and info.value.issues


def test_lower_refuses_absurd_batches() -> None:
    with pytest.raises(LoweringError, match="batch"):
        lower("toy", "h100", None, B=knobs.MAX_BATCH + 1)
    assert len(lower("toy", "h100", None, B=2).tasks) > 0


@pytest.mark.parametrize("args", [
    ["--config", "{cfg}", "--target", "h100"],
    ["--batch", str(10**9), "--target", "h100"],
    ["--batch", "0", "--target", "h100"],
    ["--config", "{named}"],
])
def test_cli_lower_refuses_with_exit_2_and_one_line(tmp_path: Path, args: list[str]) -> None:
    """Issue 12 item 6: N_tile 0/negative, absurd batches, sm_assignment without --target → exit 2."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tiling": {"gemv": {"N_tile": 0}}}))
    named = tmp_path / "named.json"
    named.write_text(json.dumps({"sm_assignment": "round_robin"}))
    argv = [a.format(cfg=bad, named=named) for a in args]
    code, out, err = _invoke("lower", "toy", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("amkspec: error:")


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_lower_either_refuses_an_n_tile_or_makes_a_valid_program(n_tile: int) -> None:
    import amkspec

    config = ScheduleConfig(tiling={"gemv": {"N_tile": n_tile}})
    try:
        prog = lower("toy", "h100", config)
    except ConfigError:
        assert not 1 <= n_tile <= knobs.KNOB_BY_PATH["tiling.gemv.N_tile"].maximum  # type: ignore[operator]
        return
    assert amkspec.validate(prog).ok
