"""The explicit-state model checker: exhaustive, independent of Z3."""

from __future__ import annotations

import pytest
from hypothesis import given

from amkspec.ir import load
from amkspec.proofs.model_check import StateLimit, check
from amkspec.proofs.replay import replay
from amkspec.smt.examples import EXAMPLES, layered, rule_only_partial_join
from amkspec.strategies import valid_programs
from tests.conftest import FIXTURES


@pytest.mark.parametrize(
    "name, kind",
    [
        ("partial-join read race", "read-race"),
        ("KV cache read before its append", "read-race"),
        ("overlapping tiles", "write-race"),
        ("unsatisfiable threshold", "deadlock"),
        ("SM-queue deadlock", "deadlock"),
        ("cycle", "deadlock"),
    ],
)
def test_finds_each_bug_with_a_legal_trace(name: str, kind: str) -> None:
    prog = EXAMPLES[name]()
    result = check(prog)
    found = [f for f in result.findings if f.kind == kind]
    assert found
    for f in found:
        replay(prog, f.trace)


def test_rule_only_program_is_clean() -> None:
    assert check(rule_only_partial_join()).findings == ()


def test_toy_fixture_is_clean() -> None:
    result = check(load(FIXTURES / "toy1L__default.json"))
    assert result.findings == () and result.states > 27


def test_state_limit() -> None:
    with pytest.raises(StateLimit):
        check(layered(16), max_states=50)


@given(valid_programs(max_tasks=8))
def test_valid_programs_have_no_bad_state(prog) -> None:  # type: ignore[no-untyped-def]
    assert check(prog).findings == ()
