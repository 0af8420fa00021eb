"""``explain``: every rejection of :func:`amkspec.proofs.validate` labelled witnessed or rule-only (spec §3).

A *witnessed* rejection comes with a bad execution found by Z3 that is a real
execution: the replay checker accepts its trace, **and** the ReferenceVM driven by
that trace (shadow state, synthetic data; :func:`amkspec.vm.witness.confirm_witness`)
reproduces the stale read, the overlapping writes, the clobbered page or the stuck
state. Everything else is *rule-only*, with the reason: no execution in the counter
model misbehaves (a partial wait whose producers' outputs nobody reads: Z3 answers
UNSAT), the rule is not about executions (a shape error, a launch limit), or the
witness did not replay. For an accepted program every query of
:meth:`~amkspec.smt.queries.Prover.prove_all` is run and each answer without a witness is
reported as *proved*, with what decided it: a Z3 check (UNSAT); the footprints, for an
unwritten-read query whose reads every other writer covers (coverage has no execution to
search); or, above :data:`~amkspec.smt.queries.FULL_ENCODING_MAX_TASKS` tasks, an algorithm
(happens-before, the maximal run, peeling). A confirmed witness for an accepted program
would mean the validator is unsound, and is reported as a finding without a code.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from amkspec.evidence.replay import ReplayError, check_witness
from amkspec.ir import MegakernelProgram
from amkspec.proofs import Diagnostic, Severity, ValidationResult, validated
from amkspec.proofs.diagnostics import CODES, Family
from amkspec.smt.queries import Z3, Prover, QueryResult
from amkspec.smt.view import PageShare, Unencodable
from amkspec.smt.witness import Witness

CLAUSE_OF_KIND = {
    "read-race": Family.RACES.section,
    "kv-race": Family.RACES.section,
    "unwritten-read": Family.RACES.section,
    "write-race": Family.RACES.section,
    "page-clobber": Family.RACES.section,
    "deadlock": Family.DEADLOCK.section,
    "cycle": Family.DEADLOCK.section,
}
"""The spec section that rules out each kind of bad execution a Z3 query looks for."""

KIND_OF_CODE = {
    "S103": "counter-init",
    "S105": "deadlock",
    "D201": "deadlock",
    "D202": "deadlock",
    "D203": "deadlock",
    "D204": "deadlock",
    "D205": "deadlock",
    "R301": "read-race",
    "R302": "unwritten-read",
    "R303": "read-race",
    "R304": "unwritten-read",
    "R305": "kv-race",
    "R306": "write-race",
    "R307": "read-only-write",
    "R308": "unwritten-read",
    "R309": "on-chip",
    "R311": "page-clobber",
}
"""The witness kind a code is checked against; other codes are rule-only by nature. A cycle
(D204) is only a witness when it is a stuck state: with partial waits a graph cycle can run."""

NOT_AN_EXECUTION = "the rule constrains the program's form, not its executions (no witness exists)"
MAX_CLOBBER_TRIPLES = 16
"""How many (writer, reader, clobberer) triples of one page share are tried one by one when the
share's own witness does not replay."""

UNSAT = "Z3 finds no bad execution in the counter model (UNSAT): the rule forbids a program that runs"


@attrs.frozen
class Finding:
    """One validator finding (or one proved query): its code and spec clause, whether it is
    ``witnessed``, ``rule-only`` or ``proved``, the tasks involved and, when witnessed, the replayed
    witness (spec §3)."""

    code: str | None
    clause: str
    status: str
    kind: str
    tasks: tuple[int, ...]
    message: str
    witness: Witness | None = None
    queries: int = 0
    seconds: float = 0.0
    reason: str = ""
    """Why a finding is rule-only (empty otherwise)."""

    def to_dict(self, prog: MegakernelProgram) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "clause": self.clause,
            "status": self.status,
            "kind": self.kind,
            "tasks": list(self.tasks),
            "message": self.message,
            "witness": None if self.witness is None else self.witness.to_dict(prog),
        }
        if self.status == "proved":
            out.update(queries=self.queries, seconds=round(self.seconds, 4))
        if self.status == "rule-only":
            out["reason"] = self.reason
        return out


@attrs.frozen
class Explanation:
    """The validator's verdict and every finding of :func:`explain` (spec §3)."""

    verdict: str
    findings: tuple[Finding, ...]

    def to_dict(self, prog: MegakernelProgram) -> dict[str, Any]:
        return {"verdict": self.verdict, "findings": [f.to_dict(prog) for f in self.findings]}

    @property
    def witnessed(self) -> int:
        return sum(f.status == "witnessed" for f in self.findings)

    @property
    def rule_only(self) -> int:
        return sum(f.status == "rule-only" for f in self.findings)


def _kind(code: str) -> str:
    return KIND_OF_CODE.get(code, CODES[code].family.value.replace(" ", "-"))


Confirm = Callable[[MegakernelProgram, dict[str, Any]], "str | None"]
"""Replays a witness on an executing machine: None when it reproduces the claim, else why not."""


class _Matcher:
    """Runs the queries that can witness one diagnostic, keeping the first confirmed witness."""

    def __init__(self, prover: Prover, confirm: Confirm) -> None:
        self.p = prover
        self.confirm = confirm
        self.pos = {t.id: t.index for t in prover.view.tasks}

    def idx(self, ids: tuple[int, ...]) -> list[int]:
        return [self.pos[t] for t in ids if type(t) is int and t in self.pos]

    def witness(self, d: Diagnostic) -> tuple[Witness | None, str]:
        """The confirmed witness of ``d``, or None and why there is none."""
        kind = KIND_OF_CODE.get(d.code)
        candidates = self._candidates(d, kind)
        if candidates is None:
            return None, NOT_AN_EXECUTION
        reason = UNSAT
        for run in candidates:
            result = run()
            if result is None or result.witness is None:
                continue
            w, why = _replayed(self.p.prog, result.witness, self.confirm)
            if w is not None:
                return w, ""
            reason = why
        return None, reason

    def _candidates(self, d: Diagnostic, kind: str | None) -> list[Callable[[], QueryResult | None]] | None:
        tasks, buffer = self.idx(d.tasks), (d.buffers[0] if d.buffers else None)
        view = self.p.view
        if kind == "deadlock":
            return [partial(self.p.deadlock, t) for t in tasks[:4]] or [self.p.deadlock]
        if kind in ("read-race", "kv-race"):
            return [lambda: self.p.read_race(tasks[0], buffer, tasks[1:])] if tasks else []
        if kind == "unwritten-read":
            readers = tasks if d.code != "R308" else [
                o.reader for o in view.reads if o.buffer == buffer and o.unwritten
            ]
            return [partial(self.p.unwritten_read, r, buffer) for r in readers[:8] if buffer is not None]
        if kind == "write-race":
            return [lambda: self._write(d, tasks)]
        if kind == "read-only-write":
            return self._readonly(tasks, buffer)
        if kind == "counter-init":
            return self._init(d)
        if kind == "page-clobber":
            return self._page(d)
        return None

    def _write(self, d: Diagnostic, tasks: list[int]) -> QueryResult | None:
        pair = next(
            (
                p
                for p in self.p.view.writer_pairs
                if {p.a, p.b} == set(tasks[:2]) and (not d.buffers or p.buffer == d.buffers[0])
            ),
            None,
        )
        return None if pair is None else self.p.write_race(pair)

    def _readonly(self, tasks: list[int], buffer: int | None) -> list[Callable[[], QueryResult | None]]:
        """A write to a read-only buffer races with its readers (who take no dependency on it)."""
        if not tasks or buffer is None:
            return []
        writer = tasks[0]
        readers = [o.reader for o in self.p.view.reads if o.buffer == buffer and writer in o.writers]
        runs: list[Callable[[], QueryResult | None]] = [
            partial(self.p.read_race, r, buffer, [writer]) for r in readers[:8]
        ]
        runs += [
            partial(self.p.write_race, p)
            for p in self.p.view.writer_pairs
            if p.buffer == buffer and writer in (p.a, p.b)
        ][:4]
        return runs

    def _init(self, d: Diagnostic) -> list[Callable[[], QueryResult | None]]:
        """A non-zero init lets waits on the counter pass early: look for the race that opens."""
        counters = set(d.counters)
        view = self.p.view
        waiting = {t.index for t in view.tasks if any(c in counters for c, _ in t.waits)}
        readers = [r for r in sorted(waiting) if r in self.p.reads_of][:8]
        runs: list[Callable[[], QueryResult | None]] = [partial(self.p.read_race, r) for r in readers]
        runs += [
            partial(self.p.write_race, p) for p in view.writer_pairs if p.a in waiting or p.b in waiting
        ][:4]
        return runs

    def _page(self, d: Diagnostic) -> list[Callable[[], QueryResult | None]]:
        """The share's query, then each of its triples alone: the model Z3 picks for the whole share
        may be one the ReferenceVM replay does not reproduce while another triple's is."""
        if len(d.buffers) != 2 or not self.p.prog.pages:
            return []
        pages = self.p.prog.pages.buffer_to_page
        a, b = d.buffers
        if pages.get(a) is None or pages.get(a) != pages.get(b):
            return []
        share = PageShare(pages[a], a, b)
        triples = self.p.clobber_triples(share)[:MAX_CLOBBER_TRIPLES]
        whole: list[Callable[[], QueryResult | None]] = [partial(self.p.page_clobber, share)]
        return whole + [partial(self.p.page_clobber, share, t) for t in triples]


def _vm_confirm(prog: MegakernelProgram, witness: dict[str, Any]) -> str | None:
    """The default confirmation: the ReferenceVM replay (needs torch; without it nothing is confirmed)."""
    try:
        from amkspec.vm.witness import confirm_witness
    except ImportError as exc:  # pragma: no cover - torch is an optional extra
        return f"the ReferenceVM is not available ({exc})"
    return confirm_witness(prog, witness)


def explain(
    prog: MegakernelProgram, confirm: Confirm | None = None, *, validation: ValidationResult | None = None
) -> Explanation:
    """Validate ``prog`` and discharge each finding (rejected) or every query (accepted) with Z3.

    A witness counts only when ``confirm`` (default: the ReferenceVM replay) reproduces it.
    ``validation``: the caller's result of ``validate()`` on this very program (used when its stats
    match, :func:`amkspec.proofs.validated`), so a command validates once.
    """
    confirm = confirm or _vm_confirm
    result = validated(prog, validation)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    try:
        prover = Prover(prog)
    except Unencodable as exc:
        why = f"the program's executions are not well defined ({exc})"
        return Explanation("rejected", tuple(_finding(d, None, why) for d in errors))
    if errors:
        matcher = _Matcher(prover, confirm)
        return Explanation("rejected", tuple(_finding(d, *matcher.witness(d)) for d in errors))
    return Explanation("accepted", tuple(_proofs(prog, prover.prove_all(), confirm)))


def _replayed(prog: MegakernelProgram, w: Witness, confirm: Confirm) -> tuple[Witness | None, str]:
    """``w`` when its trace is legal and shows its claim on the abstract machine and on ``confirm``."""
    data = w.to_dict(prog)
    try:
        check_witness(prog, data)
    except ReplayError as exc:
        return None, f"the witness trace does not replay on the counter machine: {exc}"
    why = confirm(prog, data)
    if why is not None:
        return None, f"Z3 found an execution but the ReferenceVM replay does not reproduce it: {why}"
    return w, ""


def _finding(d: Diagnostic, w: Witness | None, reason: str) -> Finding:
    kind = w.kind if w is not None else _kind(d.code)
    status = "witnessed" if w is not None else "rule-only"
    return Finding(d.code, d.clause, status, kind, d.tasks, d.message, w, reason=reason)


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def _methods(results: list[QueryResult]) -> str:
    """How the queries were decided, e.g. "3 by Z3 (UNSAT), 5 by happens-before": only a Z3
    check is called a Z3 proof (large programs take the reduced path, see :mod:`amkspec.smt.queries`)."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.by] = counts.get(r.by, 0) + 1
    return ", ".join(f"{n} by {by}{' (UNSAT)' if by == Z3 else ''}" for by, n in counts.items())


def _proofs(prog: MegakernelProgram, results: list[QueryResult], confirm: Confirm) -> list[Finding]:
    """One "proved" finding per query kind; any confirmed witness is a finding of its own."""
    out: list[Finding] = []
    by_kind: dict[str, list[QueryResult]] = {}
    for r in results:
        by_kind.setdefault(r.kind, []).append(r)
    for kind, rs in by_kind.items():
        proved = [r for r in rs if r.proved]
        if proved:
            out.append(
                Finding(
                    None,
                    CLAUSE_OF_KIND[kind],
                    "proved",
                    kind,
                    (),
                    f"{_queries(len(proved))} proved ({_methods(proved)}): no {kind} in any execution",
                    queries=len(proved),
                    seconds=sum(r.seconds for r in proved),
                )
            )
        for r in rs:
            w = _replayed(prog, r.witness, confirm)[0] if r.witness is not None else None
            if w is not None:
                out.append(
                    Finding(
                        None,
                        CLAUSE_OF_KIND[w.kind],
                        "witnessed",
                        w.kind,
                        w.tasks,
                        f"accepted by validate() but {w.property}",
                        w,
                    )
                )
    return out


__all__ = ["Confirm", "Explanation", "Finding", "explain"]
