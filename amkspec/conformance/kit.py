"""Running the kit: every case against one implementation, results by case, by rule and by level
(spec §9.1, §9.4).

A case's findings each cite rules (:mod:`amkspec.conformance.judge`). A finding *counts* at a level
when every rule it cites belongs to that level (a failure that only a strict rule explains does not
count at ``core``), and it *binds* — fails certification at that level — when it also cites a MUST.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from amkspec.conformance.cases import Case, discover
from amkspec.conformance.client import ProtocolFailure, Session
from amkspec.conformance.judge import FAIL, NA, PASS, Finding, judge
from amkspec.conformance.rules import RULES, Keyword, Level, Rule
from amkspec.ir import AmkspecError


class NoCases(AmkspecError):
    """The selection holds no case: certifying nothing is refused (unusable input)."""


class ImplStartError(AmkspecError):
    """The implementation did not start or did not complete the ``start`` handshake (unusable input)."""


def finding_level(finding: Finding) -> Level:
    """The level a finding belongs to: strict when a rule it cites is strict."""
    strict = any(RULES[r].level is Level.STRICT for r in finding.rules if r in RULES)
    return Level.STRICT if strict else Level.CORE


def binds(finding: Finding, level: Level) -> bool:
    """Whether ``finding`` fails certification at ``level``: it belongs to the level and cites a MUST
    (a rule the registry does not know counts as a core MUST)."""
    must = any(r not in RULES or RULES[r].keyword is Keyword.MUST for r in finding.rules)
    return must and level.includes(finding_level(finding))


@attrs.frozen
class CaseResult:
    """One case's outcome (``failed`` when it has findings at any level)."""

    case: Case
    status: str
    reason: str
    seconds: float
    findings: tuple[Finding, ...] = ()

    def findings_at(self, level: Level) -> list[Finding]:
        """The findings that count at ``level``."""
        return [f for f in self.findings if level.includes(finding_level(f))]

    def fails_at(self, level: Level) -> bool:
        """Whether the case fails certification at ``level``."""
        return any(binds(f, level) for f in self.findings)


UNTESTED, OUTSIDE = "untested", "outside the kit"
"""Statuses of a rule without cases in the run: *untested*, or *outside the kit* when the protocol
cannot drive what the rule is about and amkspec's own tests verify it (``Rule.verified_by``, spec §9.1):
the kit certifies neither."""


@attrs.frozen
class RuleResult:
    """A rule's status at one level: failed if a finding that counts there cites it, passed if a case
    of it was judged and none failed, not applicable if all its cases were; :data:`UNTESTED` or
    :data:`OUTSIDE` if it has none."""

    rule: str
    status: str
    cases: tuple[str, ...]
    failed: tuple[str, ...]


@attrs.define
class KitRun:
    """Everything a report needs; ``level`` is the level the verdict (and the exit status) is for."""

    command: str
    implementation: dict[str, Any]
    results: list[CaseResult]
    seconds: float
    restarts: int
    level: Level = Level.CORE

    def passed_at(self, level: Level) -> bool:
        """No case fails certification at ``level`` (failures of SHOULD rules, and at ``core`` of
        strict rules, are reported only)."""
        return not any(r.fails_at(level) for r in self.results)

    @property
    def passed(self) -> bool:
        """The verdict at :attr:`level`: exit 0 exactly when it is true."""
        return self.passed_at(self.level)

    def rule_results(self, level: Level) -> list[RuleResult]:
        """The status of every rule of ``level`` (core rules at ``core``, every rule at ``strict``)."""
        return [self._rule_result(rule, level) for rule in RULES.values() if level.includes(rule.level)]

    def _rule_result(self, rule: Rule, level: Level) -> RuleResult:
        mine = [r for r in self.results if rule.every_case or rule.id in r.case.rules]
        failed = tuple(r.case.id for r in mine if any(rule.id in f.rules for f in r.findings_at(level)))
        statuses = {r.status for r in mine}
        status = (
            FAIL
            if failed
            else PASS
            if statuses - {NA}
            else NA
            if statuses
            else OUTSIDE
            if rule.verified_by
            else UNTESTED
        )
        return RuleResult(rule.id, status, tuple(r.case.id for r in mine), failed)


def run_kit(
    command: str,
    cases_dir: Path,
    *,
    select: str | None = None,
    level: Level = Level.CORE,
    timeout_s: float = 60.0,
    start_timeout_s: float | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> KitRun:
    """Run every case under ``cases_dir`` against the implementation ``command``.

    ``timeout_s`` bounds every request, the ``start`` handshake included unless ``start_timeout_s``
    is given. Raises :class:`~amkspec.conformance.cases.CaseError` for a malformed case file,
    :class:`NoCases` when nothing is selected, :class:`ImplStartError` when the implementation does
    not start, and :class:`~amkspec.conformance.client.ImplCommandError` for a ``command`` that is
    no command line — all before any case is judged."""
    cases = select_cases(cases_dir, select)
    start_s = timeout_s if start_timeout_s is None else start_timeout_s
    session = Session(command, timeout_s=timeout_s, start_timeout_s=start_s)
    start_session(session)
    t0 = time.perf_counter()
    results: list[CaseResult] = []
    try:
        for case in cases:
            result = judge_one(case, session)
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        session.stop()
    return KitRun(command, session.info, results, time.perf_counter() - t0, session.restarts, level)


def select_cases(cases_dir: Path, select: str | None) -> list[Case]:
    """The cases under ``cases_dir`` whose id contains ``select``; :class:`NoCases` when none."""
    cases = discover(cases_dir, select)
    if not cases:
        which = f" matches -k {select!r}" if select is not None else ""
        raise NoCases(f"no conformance case under {cases_dir}{which}: nothing to certify")
    return cases


def start_session(session: Session) -> None:
    """Start the implementation, or raise :class:`ImplStartError` naming its command."""
    try:
        session.start()
    except ProtocolFailure as exc:
        raise ImplStartError(f"the implementation {session.command!r} did not start: {exc}") from None


def judge_one(case: Case, session: Session) -> CaseResult:
    """Judge one case and time it."""
    t = time.perf_counter()
    verdict = judge(case, session)
    return CaseResult(
        case, verdict.status, verdict.reason, time.perf_counter() - t, verdict.findings
    )

