"""Every conformance case against the implementation under test (``--impl``; spec §9.4)."""

from __future__ import annotations

import time

import pytest

from amkspec.conformance.cases import Case, default_cases_dir, discover
from amkspec.conformance.client import Session
from amkspec.conformance.judge import FAIL, NA, judge
from amkspec.conformance.kit import CaseResult
from conformance.conftest import RESULTS

CASES = discover(default_cases_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, kit_session: Session) -> None:
    t0 = time.perf_counter()
    verdict = judge(case, kit_session)
    RESULTS.append(
        CaseResult(case, verdict.status, verdict.reason, time.perf_counter() - t0, verdict.protocol)
    )
    if verdict.status == NA:
        pytest.skip(f"not applicable: {verdict.reason}")
    if verdict.status == FAIL:
        pytest.fail(f"[{', '.join(case.rules)}] {verdict.reason}", pytrace=False)
