"""Every conformance case against the implementation under test (``--impl``, ``--level``; spec §9.4)."""

from __future__ import annotations

import pytest

from amkspec.conformance.cases import Case
from amkspec.conformance.client import Session
from amkspec.conformance.judge import NA
from amkspec.conformance.kit import binds, judge_one
from amkspec.conformance.rules import Level
from corpus.conftest import RESULTS


def test_case(case: Case, kit_session: Session, kit_level: Level) -> None:
    result = judge_one(case, kit_session)
    RESULTS.append(result)
    if result.status == NA:
        pytest.skip(f"not applicable: {result.reason}")
    failing = [f for f in result.findings if binds(f, kit_level)]
    if failing:
        pytest.fail("; ".join(f"[{', '.join(f.rules)}] {f.message}" for f in failing), pytrace=False)
    if result.findings:
        first = result.findings[0]
        pytest.xfail(f"not required at level {kit_level.value}: [{', '.join(first.rules)}] {first.message}")
