"""Explicit-state model checker for small programs (≲ 12 tasks): an oracle independent of Z3.

It enumerates every reachable state of the interleaving semantics of spec §2.2: which
tasks have started, which have ended, and for each started task the set of tasks whose
writes are **visible** to it (spec §2.1: a task acquires, at its start, the writes of the
producers whose increments it observed on the counters it waits on, and transitively
what they had acquired). A task starts when every wait holds (counters start at their
``init``) and its SM-queue predecessor (task-list order) has ended; a started task may
end at any time. Elements read and written come from :mod:`amkspec.footprint`.

Findings (``kind``), each with a trace that reaches it:

* ``read-race``: a task starts while another writer of elements it reads of a transient
  buffer (ACTIVATION, IO_OUTPUT, KV_CACHE) has not ended;
* ``write-race``: two writers of overlapping elements run at once, or run in both orders
  in two executions;
* ``unfenced-read`` / ``unfenced-write``: the same pairs always ordered in time, but by an
  SM queue only, so the write is never released to the other task (spec §2.1);
* ``unwritten-read``: a task reads elements of an ACTIVATION or IO_OUTPUT that no other
  task writes (its own output included); ``unwritten-output``: the host reads an
  IO_OUTPUT element no task writes, after the launch;
* ``readonly-write``: a task writes a WEIGHT, CONST or IO_INPUT buffer, whose readers
  (in this launch or a later one) take no dependency;
* ``page-clobber``: two written buffers of one page whose uses come in both orders (some write of
  each can start before a use of the other has ended); ``unfenced-page`` when the only
  order is an SM queue;
* ``on-chip``: an SMEM/REGISTER buffer used on two SMs, or by assigned and unassigned tasks;
* ``deadlock``: a reachable state where nothing runs, nothing can start, and not every
  task has ended.

This module deliberately shares no code with :mod:`amkspec.smt`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import attrs

from amkspec.footprint import Memo, task_footprint, uncovered, whole
from amkspec.ir import ON_CHIP_SPACES, READONLY_KINDS, Buffer, BufferKind, MegakernelProgram
from amkspec.ir.trace import Event, Trace

_TRANSIENT = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.KV_CACHE)
_FRESH = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT)

State = tuple[int, int, tuple[int, ...]]
"""(started mask, ended mask, visible mask per task: 0 until the task starts)."""


class StateLimit(RuntimeError):
    """The program has more reachable states than the checker was allowed to visit."""


@attrs.frozen
class Finding:
    """``kind`` as in the module docstring; ``tasks`` are ids."""

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
        """The kinds of the findings."""
        return {f.kind for f in self.findings}

    def read_races(self) -> set[tuple[int, int, int]]:
        """(reader, writer, buffer) triples of timing read races."""
        return {
            (f.tasks[0], f.tasks[1], f.buffer)
            for f in self.findings
            if f.kind == "read-race" and f.buffer is not None
        }

    def write_races(self) -> set[tuple[int, int]]:
        """(writer, writer) pairs whose writes can overlap or reorder (spec §3.3)."""
        return {(f.tasks[0], f.tasks[1]) for f in self.findings if f.kind == "write-race"}


class _Program:
    """Bit-level tables of a program; tasks addressed by list position."""

    def __init__(self, prog: MegakernelProgram, memo: Memo) -> None:
        tasks = prog.tasks
        self.ids = [t.id for t in tasks]
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("two tasks share an id")
        self.n = n = len(tasks)
        self.init = {c.id: c.init for c in prog.counters if type(c.init) is int}
        prod: dict[Any, int] = {}
        for i, t in enumerate(tasks):
            prod[t.out_counter] = prod.get(t.out_counter, 0) | (1 << i)
        self.waits = [
            [(prod.get(w.counter, 0), w.threshold - self.init.get(w.counter, 0)) for w in t.waits]
            for t in tasks
        ]
        last: dict[Any, int] = {}
        self.prev = [-1] * n
        for i, t in enumerate(tasks):
            if type(t.sm) is int:
                self.prev[i] = last.get(t.sm, -1)
                last[t.sm] = i
        buffers: dict[int, Buffer] = {}
        for b in prog.buffers:
            buffers.setdefault(b.id, b)
        fps = [task_footprint(t, buffers, memo) for t in tasks]
        self.readonly = [any(buffers[b].kind in READONLY_KINDS for b in fp.writes) for fp in fps]
        self.reads: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        """Per reader: (other writer of elements it reads, buffer)."""
        self.unwritten: list[int | None] = [None] * n
        self.pairs: list[tuple[int, int, int]] = []
        self.output_gap: list[int] = []
        for bid, buf in buffers.items():
            if buf.kind in _TRANSIENT:
                self._index_buffer(bid, buf, fps)
        self.pages = self._page_pairs(prog, buffers, fps)
        self.on_chip = self._on_chip(tasks, buffers, fps)

    def _index_buffer(self, bid: int, buf: Buffer, fps: list[Any]) -> None:
        writers = [(i, fp.write(bid)) for i, fp in enumerate(fps) if not fp.write(bid).is_empty]
        for i, fp in enumerate(fps):
            region = fp.read(bid)
            if region.is_empty:
                continue
            others = [(w, r) for w, r in writers if w != i and r.overlaps(region)]
            self.reads[i].extend((w, bid) for w, _ in others)
            if buf.kind in _FRESH and uncovered(region, [r for _, r in others], buf.shape):
                self.unwritten[i] = bid
        for x, (a, ra) in enumerate(writers):
            self.pairs.extend((a, c, bid) for c, rc in writers[x + 1 :] if ra.overlaps(rc))
        if buf.kind is BufferKind.IO_OUTPUT and uncovered(
            whole(buf.shape), [r for _, r in writers], buf.shape
        ):
            self.output_gap.append(bid)

    @staticmethod
    def _page_pairs(
        prog: MegakernelProgram, buffers: dict[int, Buffer], fps: list[Any]
    ) -> list[tuple[int, int, int, int, int, int, int]]:
        """(page, x, y, uses of x, writers of x, uses of y, writers of y) as bit masks."""
        if prog.pages is None:
            return []

        def mask(bid: int, write_only: bool) -> int:
            m = 0
            for i, fp in enumerate(fps):
                touched = not fp.write(bid).is_empty or (not write_only and not fp.read(bid).is_empty)
                m |= touched << i
            return m

        by_page: dict[int, list[int]] = {}
        for bid, pid in sorted(prog.pages.buffer_to_page.items()):
            if bid in buffers and mask(bid, True):  # a buffer nobody writes holds no data to clobber
                by_page.setdefault(pid, []).append(bid)
        return [
            (pid, x, y, mask(x, False), mask(x, True), mask(y, False), mask(y, True))
            for pid, bids in by_page.items()
            for n, x in enumerate(bids)
            for y in bids[n + 1 :]
        ]

    @staticmethod
    def _on_chip(tasks: list[Any], buffers: dict[int, Buffer], fps: list[Any]) -> list[tuple[int, list[int]]]:
        found = []
        for bid, buf in buffers.items():
            if buf.space in ON_CHIP_SPACES:
                users = [i for i, fp in enumerate(fps) if bid in fp.reads or bid in fp.writes]
                if len({tasks[i].sm if type(tasks[i].sm) is int else None for i in users}) > 1:
                    found.append((bid, users))
        return found

    def can_start(self, i: int, ended: int) -> bool:
        if self.prev[i] >= 0 and not ended >> self.prev[i] & 1:
            return False
        return all((ended & mask).bit_count() >= th for mask, th in self.waits[i])

    def visible(self, i: int, ended: int, vis: tuple[int, ...]) -> int:
        """Writes task ``i`` acquires when it starts now: the ended producers of the counters it
        waits on, and what they had acquired (spec §2.1)."""
        seen = 0
        for mask, _ in self.waits[i]:
            done = ended & mask
            seen |= done
            while done:
                low = done & -done
                seen |= vis[low.bit_length() - 1]
                done ^= low
        return seen


class _Explorer:
    """Breadth-first search of the state space, recording findings with their traces."""

    def __init__(self, p: _Program, max_states: int) -> None:
        self.p = p
        self.max_states = max_states
        start: State = (0, 0, (0,) * p.n)
        self.parent: dict[State, tuple[State, Event] | None] = {start: None}
        self.queue = deque([start])
        self.findings: dict[tuple[object, ...], Finding] = {}
        self.order_seen: set[tuple[int, int]] = set()
        self.page_flags: set[tuple[int, int, int, int, str]] = set()

    def trace(self, state: State, last: Event | None = None) -> Trace:
        out: list[Event] = [] if last is None else [last]
        link = self.parent[state]
        while link is not None:
            state, ev = link
            out.append(ev)
            link = self.parent[state]
        return tuple(reversed(out))

    def note(self, key: tuple[object, ...], kind: str, tasks: list[int], buf: int | None, tr: Trace) -> None:
        if key not in self.findings:
            self.findings[key] = Finding(kind, tuple(self.p.ids[i] for i in tasks), buf, tr)

    def run(self) -> CheckResult:
        p = self.p
        full = (1 << p.n) - 1
        while self.queue:
            state = self.queue.popleft()
            started, ended, vis = state
            moves: list[tuple[State, Event]] = []
            for i in range(p.n):
                bit = 1 << i
                if started & ~ended & bit:
                    moves.append(((started, ended | bit, vis), Event("end", p.ids[i])))
                elif not started & bit and p.can_start(i, ended):
                    seen = p.visible(i, ended, vis)
                    ev = Event("start", p.ids[i])
                    self.on_start(i, state, seen, ev)
                    moves.append(((started | bit, ended, (*vis[:i], seen, *vis[i + 1 :])), ev))
            if not moves and ended != full:
                stuck = [i for i in range(p.n) if not started >> i & 1]
                self.note(("d",), "deadlock", stuck, None, self.trace(state))
            if ended == full:
                for bid in p.output_gap:
                    self.note(("o", bid), "unwritten-output", [], bid, self.trace(state))
            for nxt, ev in moves:
                if nxt not in self.parent:
                    if len(self.parent) >= self.max_states:
                        raise StateLimit(f"more than {self.max_states} reachable states")
                    self.parent[nxt] = (state, ev)
                    self.queue.append(nxt)
        self.page_findings()
        return CheckResult(len(self.parent), tuple(self.findings.values()))

    def on_start(self, i: int, state: State, seen: int, ev: Event) -> None:
        p = self.p
        started, ended, _ = state
        if p.readonly[i]:
            self.note(("ro", i), "readonly-write", [i], None, self.trace(state, ev))
        if p.unwritten[i] is not None:
            self.note(("u", i), "unwritten-read", [i], p.unwritten[i], self.trace(state, ev))
        for w, b in p.reads[i]:
            if not ended >> w & 1:
                self.note(("r", i, w, b), "read-race", [i, w], b, self.trace(state, ev))
            elif not seen >> w & 1:
                self.note(("ur", i, w, b), "unfenced-read", [i, w], b, self.trace(state, ev))
        for a, c, b in p.pairs:
            other = c if a == i else a if c == i else -1
            if other < 0 or not started >> other & 1:
                continue
            if not ended >> other & 1 or (i, other) in self.order_seen:
                self.note(("w", a, c), "write-race", [a, c], b, self.trace(state, ev))
            elif not seen >> other & 1:
                self.note(("uw", a, c), "unfenced-write", [a, c], b, self.trace(state, ev))
            self.order_seen.add((other, i))
        for pid, x, y, ux, wx, uy, wy in p.pages:
            for first, uses, then_writes in ((x, ux, wy), (y, uy, wx)):
                if not then_writes >> i & 1:
                    continue
                if uses >> i & 1:
                    self.note(("p", pid, x, y), "page-clobber", [i], first, self.trace(state, ev))
                if uses & ~ended & ~(1 << i):
                    self.page_flags.add((pid, x, y, first, "time"))
                if uses & ~seen & ~(1 << i):
                    self.page_flags.add((pid, x, y, first, "fence"))

    def page_findings(self) -> None:
        for pid, x, y, *_ in self.p.pages:
            flags = self.page_flags
            if (pid, x, y, x, "time") in flags and (pid, x, y, y, "time") in flags:
                self.note(("p", pid, x, y), "page-clobber", [], x, ())
            elif (pid, x, y, x, "fence") in flags and (pid, x, y, y, "fence") in flags:
                self.note(("up", pid, x, y), "unfenced-page", [], x, ())
        for bid, users in self.p.on_chip:
            self.note(("c", bid), "on-chip", users, bid, ())


def check(prog: MegakernelProgram, max_states: int = 500_000, memo: Memo | None = None) -> CheckResult:
    """Explore every reachable state of ``prog``; raises :class:`StateLimit` beyond ``max_states``.

    ``memo`` caches footprints; pass one to many programs only when their buffer tables agree
    (each id has the same shape and dtype in every program), as in :mod:`amkspec.evidence.exhaustive`.
    Spec §2, §3.
    """
    return _Explorer(_Program(prog, memo if memo is not None else Memo()), max_states).run()
