"""Running the kit: every case against one implementation, results by case and by rule (spec §9.4)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from amkspec.conformance.cases import Case, discover
from amkspec.conformance.client import ProtocolFailure, Session
from amkspec.conformance.judge import FAIL, NA, PASS, Verdict, judge
from amkspec.conformance.rules import RULES, Level, Rule


@attrs.frozen
class CaseResult:
    """One case's outcome."""

    case: Case
    status: str
    reason: str
    seconds: float
    protocol: bool = False


UNTESTED, OUTSIDE = "untested", "outside the kit"
"""Statuses of a rule without cases in the run: *untested*, or *outside the kit* when the protocol
cannot drive what the rule is about and amkspec's own tests verify it (``Rule.verified_by``, spec §9.1):
the kit certifies neither."""


@attrs.frozen
class RuleResult:
    """A rule's status: failed if any of its cases failed, passed if some passed and none failed,
    not applicable if all its cases were; :data:`UNTESTED` or :data:`OUTSIDE` if it has none."""

    rule: str
    status: str
    cases: tuple[str, ...]
    failed: tuple[str, ...]


@attrs.define
class KitRun:
    """Everything a report needs."""

    command: str
    implementation: dict[str, Any]
    results: list[CaseResult]
    seconds: float
    restarts: int

    @property
    def passed(self) -> bool:
        """Exit 0: every applicable case passed (failures only of SHOULD/MAY rules do not count)."""
        return not any(r.status == FAIL and _binding(r.case) for r in self.results)

    def rule_results(self) -> list[RuleResult]:
        by_rule: dict[str, list[CaseResult]] = {rid: [] for rid in RULES}
        for result in self.results:
            for rid in result.case.rules:
                by_rule.setdefault(rid, []).append(result)
        everything = tuple(r.case.id for r in self.results)
        out = []
        for rid, results in by_rule.items():
            rule = RULES.get(rid)
            if rule is not None and rule.every_case and not results:
                ids = everything
                failed = tuple(r.case.id for r in self.results if r.protocol)
                statuses = {PASS if r.status != NA else NA for r in self.results}
            else:
                ids = tuple(r.case.id for r in results)
                failed = tuple(r.case.id for r in results if r.status == FAIL)
                statuses = {r.status for r in results}
            status = FAIL if failed else PASS if PASS in statuses else NA if statuses else _no_case(rule)
            out.append(RuleResult(rid, status, ids, failed))
        return out


def _no_case(rule: Rule | None) -> str:
    return OUTSIDE if rule is not None and rule.verified_by else UNTESTED


def _binding(case: Case) -> bool:
    """A case counts for the exit status unless every rule it tests is a SHOULD or a MAY."""
    levels = [RULES[r].level for r in case.rules if r in RULES]
    return not levels or Level.MUST in levels


def run_kit(
    command: str,
    cases_dir: Path,
    *,
    select: str | None = None,
    timeout_s: float = 60.0,
    start_timeout_s: float | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> KitRun:
    """Run every case under ``cases_dir`` against the implementation ``command``.

    ``timeout_s`` bounds every request, the ``start`` handshake included unless ``start_timeout_s``
    is given. Raises :class:`~amkspec.conformance.cases.CaseError` for a malformed case file and
    :class:`~amkspec.conformance.client.ImplCommandError` for a ``command`` that is no command line."""
    cases = discover(cases_dir, select)
    start_s = timeout_s if start_timeout_s is None else start_timeout_s
    session = Session(command, timeout_s=timeout_s, start_timeout_s=start_s)
    t0 = time.perf_counter()
    results: list[CaseResult] = []
    try:
        info = _start(session)
        for case in cases:
            t = time.perf_counter()
            verdict = (
                judge(case, session)
                if info is not None
                else Verdict(FAIL, f"{_start_failure}: {session.info.get('error')}", True)
            )
            result = CaseResult(
                case, verdict.status, verdict.reason, time.perf_counter() - t, verdict.protocol
            )
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        session.stop()
    return KitRun(command, session.info, results, time.perf_counter() - t0, session.restarts)


_start_failure = "the implementation did not complete the start handshake"


def _start(session: Session) -> dict[str, Any] | None:
    try:
        return session.start()
    except ProtocolFailure as exc:
        session.info = {"name": "?", "version": "?", "capabilities": [], "error": str(exc)}
        return None
