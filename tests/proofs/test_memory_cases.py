"""The memory-safety conformance cases: each M4xx code triggers on its case, not on its near miss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amkspec.ir import from_dict
from amkspec.proofs import validate
from amkspec.proofs.diagnostics import CODES, Family, Severity
from amkspec.proofs.memory import check_memory_safety
from tests.conftest import ROOT

CASES_DIR = ROOT / "corpus" / "cases" / "memory"
CASE_FILES = sorted(CASES_DIR.glob("M4*.json"))


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_case_gives_its_expected_memory_codes(path: Path) -> None:
    doc = _load(path)
    codes = [d.code for d in check_memory_safety(from_dict(doc["program"]))]
    expect = doc["expect"]
    if expect["verdict"] == "rejected":
        assert codes == expect["codes"]
    else:
        assert codes == []
    assert not set(codes) & set(expect["absent_codes"])


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_validate_gives_the_case_verdict(path: Path) -> None:
    """Near misses are valid under every rule, and triggers are rejected for their own code only."""
    doc = _load(path)
    result = validate(from_dict(doc["program"]))
    errors = {d.code for d in result.diagnostics if d.severity is Severity.ERROR}
    expect = doc["expect"]
    assert result.ok == (expect["verdict"] == "accepted")
    assert errors == set(expect["codes"])


def test_every_memory_code_has_a_trigger_and_a_near_miss() -> None:
    memory_codes = {c for c, info in CODES.items() if info.family is Family.MEMORY}
    triggered = {_load(p)["expect"]["codes"][0] for p in CASE_FILES if not p.stem.endswith("_ok")}
    near = [_load(p)["expect"] for p in CASE_FILES if p.stem.endswith("_ok")]
    near_missed = {c for expect in near for c in expect["absent_codes"]}
    assert memory_codes == triggered == near_missed

