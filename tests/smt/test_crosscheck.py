"""Cross-checks of validate(), the Z3 queries and the model checker (:mod:`amkspec.smt.crosscheck`)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from amkspec.ir import MegakernelProgram
from amkspec.programs.strategies import (
    arbitrary_programs,
    mutated_valid_programs,
    sync_programs,
    valid_programs,
)
from amkspec.smt.crosscheck import crosscheck

TALLY: Counter[str] = Counter()
"""Counts over a test session: accepted, rejected, witnessed and rule-only rejections."""


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\n[smt cross-check] {dict(TALLY)}", file=sys.stderr)


@given(sync_programs())
def test_sync_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog, tally=TALLY)


@given(valid_programs(max_tasks=10))
def test_valid_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog, tally=TALLY)


@given(mutated_valid_programs())
def test_single_rule_mutations(mutation: tuple[str, MegakernelProgram]) -> None:
    crosscheck(mutation[1], tally=TALLY)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(arbitrary_programs(max_tasks=6, max_buffers=6))
def test_arbitrary_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog, model_check=False, tally=TALLY)


# The slow explorations use larger programs; run them with HYPOTHESIS_PROFILE=thorough for thousands.
@pytest.mark.slow
@given(sync_programs(max_tasks=8))
def test_many_sync_programs(prog: MegakernelProgram) -> None:
    crosscheck(prog, tally=TALLY)


@pytest.mark.slow
@given(mutated_valid_programs(max_tasks=10))
def test_many_mutations(mutation: tuple[str, MegakernelProgram]) -> None:
    crosscheck(mutation[1], tally=TALLY)
