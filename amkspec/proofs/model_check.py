"""Explicit-state model checker for small programs (≲ 12 tasks): an oracle independent of Z3.

It enumerates every reachable state of the interleaving semantics of spec §2:
a state is which tasks have started and which have ended (counter values and
the shadow set of completed writes follow from the ended set). A task starts
when all its waits hold and its SM-queue predecessor (task-list order) has
ended; a started task may end at any time. Along every transition it looks for

* **read races**: a task starts while another writer of one of its transient
  inputs (ACTIVATION, IO_OUTPUT, a KV_CACHE written this pass) has not ended;
* **write races**: two writers with overlapping footprints run at once;
* **deadlocks**: a state where nothing runs, nothing can start, and not every
  task has ended.

This module deliberately shares no code with :mod:`amkspec.smt`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import attrs

from amkspec.ir import BufferKind, InstructionKind, MegakernelProgram
from amkspec.proofs.trace import Event, Trace

_TRANSIENT = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.KV_CACHE)


class StateLimit(RuntimeError):
    """The program has more reachable states than the checker was allowed to visit."""


@attrs.frozen
class Finding:
    """``kind`` is "read-race", "write-race" or "deadlock"; ``tasks`` are ids."""

    kind: str
    tasks: tuple[int, ...]
    buffer: int | None
    trace: Trace


@attrs.frozen
class CheckResult:
    """What :func:`check` found: the number of states explored and every bad state reached (spec §3)."""

    states: int
    findings: tuple[Finding, ...]

    def kinds(self) -> set[str]:
        """The kinds of the findings (``read-race``, ``write-race``, ``deadlock``)."""
        return {f.kind for f in self.findings}

    def read_races(self) -> set[tuple[int, int, int]]:
        """(reader, writer, buffer) triples."""
        return {
            (f.tasks[0], f.tasks[1], f.buffer)
            for f in self.findings
            if f.kind == "read-race" and f.buffer is not None
        }

    def write_races(self) -> set[tuple[int, int]]:
        """(writer, writer) pairs whose writes can overlap (spec §3.2)."""
        return {(f.tasks[0], f.tasks[1]) for f in self.findings if f.kind == "write-race"}


def _cols(task: object) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    op, params = getattr(task, "op", None), getattr(task, "params", {})

    def rng(off: str, size: str) -> tuple[int, int] | None:
        lo, n = params.get(off), params.get(size)
        return (lo, lo + n) if type(lo) is int and type(n) is int and lo >= 0 and n > 0 else None

    if op not in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE):
        return (None, None)
    cols = rng("n_off", "N_tile")
    rows = rng("m_off", "M_tile") if op is InstructionKind.GEMM_TILE and cols else None
    return (rows, cols)


def _clash(x: tuple[int, int] | None, y: tuple[int, int] | None) -> bool:
    return x is None or y is None or max(x[0], y[0]) < min(x[1], y[1])


class _Program:
    """Bit-level tables of a program; tasks addressed by list position."""

    def __init__(self, prog: MegakernelProgram) -> None:
        tasks = prog.tasks
        self.ids = [t.id for t in tasks]
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("two tasks share an id")
        n = len(tasks)
        self.n = n
        prod: dict[object, int] = {}
        for i, t in enumerate(tasks):
            prod[t.out_counter] = prod.get(t.out_counter, 0) | (1 << i)
        self.waits = [[(prod.get(w.counter, 0), w.threshold) for w in t.waits] for t in tasks]
        last: dict[object, int] = {}
        self.prev: list[int] = [-1] * n
        for i, t in enumerate(tasks):
            if type(t.sm) is int:
                self.prev[i] = last.get(t.sm, -1)
                last[t.sm] = i
        kinds = {b.id: b.kind for b in prog.buffers}
        writers: dict[Any, list[int]] = {}
        for i, t in enumerate(tasks):
            for b in set(t.outputs):
                writers.setdefault(b, []).append(i)
        self.reads: list[list[tuple[int, Any]]] = [
            [
                (w, b)
                for b in dict.fromkeys(t.inputs)
                if kinds.get(b) in _TRANSIENT
                for w in writers.get(b, [])
                if w != i
            ]
            for i, t in enumerate(tasks)
        ]
        self.pairs: list[tuple[int, int, Any]] = []
        for b, ws in writers.items():
            if kinds.get(b) in _TRANSIENT:
                for x, a in enumerate(ws):
                    for c in ws[x + 1 :]:
                        fa, fc = _cols(tasks[a]), _cols(tasks[c])
                        if _clash(fa[0], fc[0]) and _clash(fa[1], fc[1]):
                            self.pairs.append((a, c, b))

    def can_start(self, i: int, ended: int) -> bool:
        if self.prev[i] >= 0 and not ended >> self.prev[i] & 1:
            return False
        return all((ended & mask).bit_count() >= th for mask, th in self.waits[i])


def check(prog: MegakernelProgram, max_states: int = 500_000) -> CheckResult:
    """Explore every reachable state of ``prog``; raises :class:`StateLimit` beyond ``max_states``.

    Spec §2, §3.
    """
    p = _Program(prog)
    full = (1 << p.n) - 1
    parent: dict[tuple[int, int], tuple[tuple[int, int], Event] | None] = {(0, 0): None}
    queue = deque([(0, 0)])
    findings: dict[tuple[object, ...], Finding] = {}

    def trace(state: tuple[int, int], last: Event | None = None) -> Trace:
        out: list[Event] = [] if last is None else [last]
        link = parent[state]
        while link is not None:
            state, ev = link
            out.append(ev)
            link = parent[state]
        return tuple(reversed(out))

    def note(key: tuple[object, ...], kind: str, tasks: list[int], buf: int | None, tr: Trace) -> None:
        if key not in findings:
            findings[key] = Finding(kind, tuple(p.ids[i] for i in tasks), buf, tr)

    while queue:
        state = queue.popleft()
        started, ended = state
        running = started & ~ended
        moves: list[tuple[tuple[int, int], Event]] = []
        for i in range(p.n):
            bit = 1 << i
            if running & bit:
                moves.append(((started, ended | bit), Event("end", p.ids[i])))
            elif not started & bit and p.can_start(i, ended):
                ev = Event("start", p.ids[i])
                moves.append(((started | bit, ended), ev))
                for w, b in p.reads[i]:
                    if not ended >> w & 1:
                        note(("r", i, w, b), "read-race", [i, w], b, trace(state, ev))
                for a, c, b in p.pairs:
                    other = c if a == i else a if c == i else -1
                    if other >= 0 and running >> other & 1:
                        note(("w", a, c), "write-race", [a, c], b, trace(state, ev))
        if not moves and ended != full:
            note(("d",), "deadlock", [i for i in range(p.n) if not started >> i & 1], None, trace(state))
        for nxt, ev in moves:
            if nxt not in parent:
                if len(parent) >= max_states:
                    raise StateLimit(f"more than {max_states} reachable states")
                parent[nxt] = (state, ev)
                queue.append(nxt)
    return CheckResult(len(parent), tuple(findings.values()))
