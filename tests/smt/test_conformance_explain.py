"""``explain`` on the conformance corpus: every semantic rejection comes with a replayed witness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amkspec.evidence.replay import check_witness
from amkspec.ir import from_dict
from amkspec.smt.explain import explain
from tests.conftest import ROOT

CASES = sorted(
    p for p in (ROOT / "corpus" / "cases").glob("*/*.json")
    if json.loads(p.read_text()).get("kind", "validate") == "validate"
)
"""The validate cases (format, run and refuse cases have no verdict to explain)."""
SEMANTIC = {"D201", "D202", "D203", "D204", "D205", "R301", "R302", "R303", "R305", "R311"}
"""Codes whose every conformance case misbehaves in some execution (R306 also has a rule-only case:
disjoint tiles under different counters)."""


def test_the_corpus_is_here_and_every_case_is_inline() -> None:
    assert CASES, "no conformance cases found"
    assert all(isinstance(json.loads(p.read_text()).get("program"), dict) for p in CASES)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_case(path: Path) -> None:
    case = json.loads(path.read_text())
    prog = from_dict(case["program"])
    result = explain(prog)
    for f in result.findings:
        if f.witness is not None:
            check_witness(prog, f.witness.to_dict(prog))
        if f.code in SEMANTIC:
            assert f.status == "witnessed", f
    if result.verdict == "accepted":
        assert all(f.status == "proved" for f in result.findings)
    assert result.verdict == case["expect"]["verdict"]
