"""Run every conformance case against the implementation under test (spec §9), and check the
corpus itself: every diagnostic code has a triggering case and a near miss, and the generated
families are exactly what ``make_cases.py`` writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runner import CASES, Implementation, case_files, load_case

from amkspec.proofs.diagnostics import CODES

UNTRIGGERABLE = {"S199"}
"""Codes no program triggers on purpose (S199 is the validator's internal-error guard)."""


@pytest.mark.parametrize("path", case_files(), ids=lambda p: str(p.relative_to(CASES)))
def test_case(path: Path, implementation: Implementation) -> None:
    case = load_case(path)
    expect = case["expect"]
    got = implementation.validate(case["program"])
    assert got["verdict"] == expect["verdict"], (case["description"], got)
    missing = [c for c in expect.get("codes", []) if c not in got["codes"]]
    present = [c for c in expect.get("absent_codes", []) if c in got["codes"]]
    assert not missing and not present, (case["description"], got)


def _cases() -> list[dict[str, Any]]:
    return [load_case(p) for p in case_files()]


def test_every_code_has_a_trigger_and_a_near_miss() -> None:
    cases = _cases()
    triggered = {c for case in cases for c in case["expect"].get("codes", [])}
    near = {
        c
        for case in cases
        if case["expect"]["verdict"] == "accepted"
        for c in case["expect"].get("absent_codes", [])
    }
    wanted = set(CODES) - UNTRIGGERABLE
    assert sorted(wanted - triggered) == []
    assert sorted(wanted - near) == []


def test_cases_are_well_formed() -> None:
    for path in case_files():
        case = load_case(path)
        assert set(case) >= {"description", "clauses", "program", "expect"}, path
        assert case["expect"]["verdict"] in ("accepted", "rejected"), path
        assert all(
            c in CODES for c in case["expect"].get("codes", []) + case["expect"].get("absent_codes", [])
        )


def test_committed_cases_match_the_generator() -> None:
    import make_cases

    generated = make_cases.build_cases()
    folders = set(make_cases.FAMILY_DIRS.values())
    on_disk = {str(p.relative_to(CASES)): p.read_text() for p in case_files() if p.parent.name in folders}
    assert sorted(on_disk) == sorted(generated)
    assert [k for k in generated if on_disk[k] != generated[k]] == []
