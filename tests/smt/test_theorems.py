"""Bounded soundness theorems at small bounds, and the counterexamples that justify our rule changes."""

from __future__ import annotations

import pytest
import z3

from amkspec.smt.theorems import THEOREMS, SymbolicProgram, Theorem, necessity, prove

BY_NAME = {t.name: t for t in THEOREMS}


@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
def test_amkspec_rules_are_sound_up_to_three_tasks(theorem: Theorem) -> None:
    result = prove(theorem, 3)
    assert result.holds is True, result.counterexample


def test_the_original_pairwise_queue_rule_is_unsound() -> None:
    result = prove(BY_NAME["sm-queue-deadlock-freedom"], 3, rules="original")
    assert result.holds is False
    assert "not started" in result.counterexample


@pytest.mark.parametrize("name", ["read-race-freedom", "kv-ordering"])
def test_the_spec_prose_provenance_rule_is_unsound(name: str) -> None:
    result = prove(BY_NAME[name], 3, rules="spec-prose")
    assert result.holds is False and "start" in result.counterexample


@pytest.mark.parametrize("sms", [False, True])
def test_the_rules_are_not_vacuous(sms: bool) -> None:
    """Programs with shared counters, waits, reads after writes and a complete run pass the rules."""
    p = SymbolicProgram(3, 1, "amkspec", sms)
    s = z3.Solver()
    s.add(p.facts)
    s.add(z3.And([p.ended(i) for i in range(3)]))
    s.add(p.waits[2][0], p.thr[2][0] == 2, p.reads[2][0], p.writes[0][0], p.writes[1][0])
    if sms:
        s.add(p.sm[0] == 0, p.sm[2] == 0)
    assert s.check() == z3.sat


def test_each_rule_is_necessary_but_two_implied_ones() -> None:
    """Dropping a rule makes some theorem fail. Self-wait is implied by acyclicity (self-edges
    count) and never-produced by coverage (a read buffer with no writer has uncovered columns)."""
    found = necessity(3)
    assert found.pop("self-wait") is None
    assert found.pop("never-produced") is None
    assert all(r is not None and r.holds is False for r in found.values())
    assert found["all-join"] is not None and found["all-join"].name == "read-race-freedom"


# -- finding 7: the theorems cover what validate() checks beyond one buffer ------------------------


@pytest.mark.parametrize(
    ("rule", "theorem"),
    [
        ("init", "read-race-freedom"),
        ("read-only", "read-race-freedom"),
        ("coverage", "unwritten-read-freedom"),
    ],
)
def test_init_read_only_and_coverage_are_modelled(rule: str, theorem: str) -> None:
    """Without S103, R307 or R308 a bad execution exists: the model has counter init, read-only
    kinds and column coverage."""
    result = prove(BY_NAME[theorem], 3, drop=[rule])
    assert result.holds is False and result.counterexample


def test_race_theorems_range_over_two_buffers() -> None:
    assert all(t.buffers >= 2 for t in THEOREMS if "deadlock" not in t.name)


def test_the_rules_hold_at_four_tasks() -> None:
    for theorem in THEOREMS:
        assert prove(theorem, 4).holds is True


def test_unknown_rules_are_refused() -> None:
    with pytest.raises(ValueError):
        SymbolicProgram(2, 1, "amkspec", False, drop=["nonsense"])
    with pytest.raises(ValueError):
        SymbolicProgram(2, 1, "nonsense", False)
