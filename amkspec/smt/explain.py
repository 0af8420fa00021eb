"""``explain``: every rejection of :func:`amkspec.proofs.validate` labelled witnessed or rule-only (spec §3).

A *witnessed* rejection comes with a bad execution found by Z3 and confirmed
by the replay checker; a *rule-only* one is forbidden by the spec although no
execution in the counter model misbehaves (a partial wait whose producers'
outputs nobody reads, a shape error, a launch limit). For an accepted program
every query is run and each UNSAT answer is reported as *proved*; a witness
for an accepted program would mean the validator is unsound, and is reported
as a finding without a code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from amkspec.ir import MegakernelProgram
from amkspec.proofs import Diagnostic, Severity, validate
from amkspec.proofs.diagnostics import CODES
from amkspec.proofs.replay import ReplayError, check_witness
from amkspec.smt.queries import Prover, QueryResult
from amkspec.smt.view import Unencodable
from amkspec.smt.witness import Witness

CLAUSE_OF_KIND = {
    "read-race": "§3.2",
    "kv-race": "§3.2",
    "unwritten-read": "§3.2",
    "write-race": "§3.2",
    "page-clobber": "§3.3",
    "deadlock": "§3.1",
    "cycle": "§3.1",
}

KIND_OF_CODE = {
    "S105": "deadlock",
    "D201": "deadlock",
    "D202": "deadlock",
    "D203": "deadlock",
    "D204": "cycle",
    "D205": "deadlock",
    "R301": "read-race",
    "R302": "unwritten-read",
    "R303": "read-race",
    "R305": "kv-race",
    "R306": "write-race",
    "R307": "read-only-write",
    "R308": "unwritten-columns",
    "R309": "on-chip",
    "R311": "page-clobber",
}
"""The witness kind a code is checked against; other codes are rule-only by nature."""


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


class _Matcher:
    """Runs the query that can witness one diagnostic."""

    def __init__(self, prover: Prover) -> None:
        self.p = prover
        self.pos = {t.id: t.index for t in prover.view.tasks}

    def idx(self, ids: tuple[int, ...]) -> list[int]:
        return [self.pos[t] for t in ids if t in self.pos]

    def witness(self, d: Diagnostic) -> Witness | None:
        tasks, kind = self.idx(d.tasks), KIND_OF_CODE.get(d.code)
        run: dict[str, Callable[[], QueryResult | None]] = {
            "deadlock": lambda: self.p.deadlock(tasks[0]) if tasks else self.p.deadlock(),
            "cycle": lambda: self.p.cycle(tasks or None),
            "read-race": lambda: self._read(d, tasks),
            "kv-race": lambda: self._read(d, tasks),
            "unwritten-read": lambda: (
                self.p.unwritten_read(tasks[0], d.buffers[0]) if tasks and d.buffers else None
            ),
            "write-race": lambda: self._write(d, tasks),
            "page-clobber": lambda: self._page(d),
        }
        if kind not in run:
            return None
        result = run[kind]()
        return None if result is None else result.witness

    def _read(self, d: Diagnostic, tasks: list[int]) -> QueryResult | None:
        if not tasks:
            return None
        buffer = d.buffers[0] if d.buffers else None
        return self.p.read_race(tasks[0], buffer, tasks[1:])

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

    def _page(self, d: Diagnostic) -> QueryResult | None:
        share = next((s for s in self.p.view.page_shares if {s.a, s.b} == set(d.buffers)), None)
        return None if share is None else self.p.page_clobber(share)


def explain(prog: MegakernelProgram) -> Explanation:
    """Validate ``prog`` and discharge each finding (rejected) or every query (accepted) with Z3."""
    result = validate(prog)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    try:
        prover = Prover(prog)
    except Unencodable:
        return Explanation("rejected", tuple(_finding(d, None) for d in errors))
    if errors:
        matcher = _Matcher(prover)
        return Explanation(
            "rejected", tuple(_finding(d, _replayed(prog, matcher.witness(d))) for d in errors)
        )
    return Explanation("accepted", tuple(_proofs(prog, prover.prove_all())))


def _replayed(prog: MegakernelProgram, w: Witness | None) -> Witness | None:
    if w is None:
        return None
    try:
        check_witness(prog, w.to_dict(prog))
    except ReplayError:
        return None
    return w


def _finding(d: Diagnostic, w: Witness | None) -> Finding:
    kind = w.kind if w is not None else _kind(d.code)
    return Finding(
        d.code, d.clause, "witnessed" if w is not None else "rule-only", kind, d.tasks, d.message, w
    )


def _proofs(prog: MegakernelProgram, results: list[QueryResult]) -> list[Finding]:
    """One "proved" finding per query kind; any witness is a finding of its own."""
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
                    f"{len(proved)} quer{'y' if len(proved) == 1 else 'ies'} UNSAT: no {kind} "
                    "in any execution",
                    queries=len(proved),
                    seconds=sum(r.seconds for r in proved),
                )
            )
        for r in rs:
            w = _replayed(prog, r.witness)
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


__all__ = ["Explanation", "Finding", "explain"]
