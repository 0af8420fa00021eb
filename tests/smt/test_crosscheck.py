"""Cross-checks of validate(), the Z3 queries and the explicit-state model checker (see oracles.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from amkspec.ir import MegakernelProgram
from amkspec.strategies import arbitrary_programs, valid_programs
from tests.smt.oracles import TALLY, crosscheck
from tests.smt.programs import mutated_valid_programs, sync_programs


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\n[smt cross-check] {dict(TALLY)}", file=sys.stderr)


@given(sync_programs())
def test_sync_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog)


@given(valid_programs(max_tasks=10))
def test_valid_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog)


@given(mutated_valid_programs())
def test_single_rule_mutations(mutation: tuple[str, MegakernelProgram]) -> None:
    crosscheck(mutation[1])


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(arbitrary_programs(max_tasks=6, max_buffers=6))
def test_arbitrary_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog, model_check=False)


# The slow explorations use larger programs; run them with HYPOTHESIS_PROFILE=thorough for thousands.
@pytest.mark.slow
@given(sync_programs(max_tasks=8))
def test_many_sync_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog)


@pytest.mark.slow
@given(mutated_valid_programs(max_tasks=10))
def test_many_mutations(mutation: tuple[str, MegakernelProgram]) -> None:
    crosscheck(mutation[1])
