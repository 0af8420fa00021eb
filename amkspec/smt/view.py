"""A normalised, index-based view of a program for the Z3 encoding (spec §2, §3).

The IR model may hold broken programs (dangling ids, odd types); the encoding
needs a program whose executions are well defined. :func:`build_view` turns a
:class:`~amkspec.ir.MegakernelProgram` into tasks addressed by list position,
with producers per counter, SM-queue predecessors and the read/write
obligations the queries discharge, or raises :class:`Unencodable` with the
reason. Dangling references keep their meaning in the execution model: a wait
on a counter nobody increments never holds, an unknown buffer is not tracked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import attrs

from amkspec.ir import READONLY_KINDS, AmkspecError, BufferKind, InstructionKind, MegakernelProgram


class Unencodable(AmkspecError, ValueError):
    """The program's executions are not well defined (e.g. two tasks share an id)."""


class SolverUnknown(AmkspecError, RuntimeError):
    """Z3 answered ``unknown`` (a resource limit or an interruption): neither proof nor witness."""


@attrs.frozen
class TaskView:
    """One task: ``waits`` are ``(counter, threshold)``; ``sm`` None means unassigned."""

    index: int
    id: int
    label: str
    out_counter: int
    waits: tuple[tuple[int, int], ...]
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    sm: int | None
    footprint: tuple[tuple[int, int] | None, tuple[int, int] | None]


@attrs.frozen
class ReadObligation:
    """Task ``reader`` reads transient ``buffer``; each of ``writers`` must end before it starts."""

    reader: int
    buffer: int
    writers: tuple[int, ...]
    kv: bool


@attrs.frozen
class WriterPair:
    """Two tasks whose write footprints on ``buffer`` overlap (spec §3.2, write-after-write)."""

    a: int
    b: int
    buffer: int


@attrs.frozen
class PageShare:
    """Buffers ``a`` and ``b`` occupy the same page (spec §4, page reuse)."""

    page: int
    a: int
    b: int


@attrs.define
class ProgramView:
    """The encodable form of a program: tasks by position, producers per counter, SM-queue
    predecessors and the read/write/page obligations the queries discharge (spec §2, §3)."""

    tasks: list[TaskView]
    producers: dict[int, list[int]]
    queue_prev: dict[int, int]
    reads: list[ReadObligation]
    writer_pairs: list[WriterPair]
    page_shares: list[PageShare]
    buffer_users: dict[int, tuple[list[int], list[int]]]
    """buffer id → (task indices that read it, task indices that write it)."""

    def preds(self, i: int) -> list[int]:
        """Direct predecessors of task ``i``: producers of its waits and its SM-queue predecessor."""
        out = [p for c, _ in self.tasks[i].waits for p in self.producers.get(c, ())]
        if i in self.queue_prev:
            out.append(self.queue_prev[i])
        return out

    def closure(self, roots: Iterable[int]) -> set[int]:
        """``roots`` and all their transitive predecessors."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i not in seen:
                seen.add(i)
                stack.extend(self.preds(i))
        return seen

    def ids(self, indices: Iterable[int]) -> list[int]:
        return [self.tasks[i].id for i in indices]


def _int(value: object, what: str) -> int:
    if type(value) is not int:
        raise Unencodable(f"{what} is not an integer: {value!r}")
    return value


def _range(params: dict[str, object], off: str, size: str) -> tuple[int, int] | None:
    lo, n = params.get(off), params.get(size)
    if type(lo) is int and type(n) is int and lo >= 0 and n > 0:
        return (lo, lo + n)
    return None


Span = tuple[int, int] | None


def footprint(op: InstructionKind, params: dict[str, object]) -> tuple[Span, Span]:
    """(rows, cols) a task writes; None = all (the tile rule of the reference validator)."""
    if op is InstructionKind.GEMV_TILE:
        return (None, _range(params, "n_off", "N_tile"))
    if op is InstructionKind.GEMM_TILE:
        cols = _range(params, "n_off", "N_tile")
        return (_range(params, "m_off", "M_tile") if cols else None, cols)
    return (None, None)


def _overlap(x: tuple[int, int] | None, y: tuple[int, int] | None) -> bool:
    return x is None or y is None or (x[0] < y[1] and y[0] < x[1])


def footprints_overlap(a: TaskView, b: TaskView) -> bool:
    """Two writes overlap unless their row ranges or their column ranges are disjoint."""
    return _overlap(a.footprint[0], b.footprint[0]) and _overlap(a.footprint[1], b.footprint[1])


def _tasks(prog: MegakernelProgram) -> list[TaskView]:
    seen: set[int] = set()
    out: list[TaskView] = []
    for index, t in enumerate(prog.tasks):
        tid = _int(t.id, f"tasks[{index}].id")
        if tid in seen:
            raise Unencodable(f"two tasks have id {tid}")
        seen.add(tid)
        waits = tuple(
            (_int(w.counter, f"task {tid} wait counter"), _int(w.threshold, f"task {tid} threshold"))
            for w in t.waits
        )
        sm = t.sm if type(t.sm) is int else None
        out.append(
            TaskView(
                index,
                tid,
                t.label,
                _int(t.out_counter, f"task {tid} out_counter"),
                waits,
                tuple(dict.fromkeys(b for b in t.inputs if type(b) is int)),
                tuple(dict.fromkeys(b for b in t.outputs if type(b) is int)),
                sm,
                footprint(t.op, t.params) if isinstance(t.op, InstructionKind) else (None, None),
            )
        )
    return out


def build_view(prog: MegakernelProgram) -> ProgramView:
    """Index ``prog`` for the encoding; raises :class:`Unencodable`."""
    tasks = _tasks(prog)
    producers: dict[int, list[int]] = defaultdict(list)
    queue_prev: dict[int, int] = {}
    last_on_sm: dict[int, int] = {}
    users: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for t in tasks:
        producers[t.out_counter].append(t.index)
        if t.sm is not None:
            if t.sm in last_on_sm:
                queue_prev[t.index] = last_on_sm[t.sm]
            last_on_sm[t.sm] = t.index
        for b in t.reads:
            users[b][0].append(t.index)
        for b in t.writes:
            users[b][1].append(t.index)
    kinds = {b.id: b.kind for b in prog.buffers if type(b.id) is int}
    reads: list[ReadObligation] = []
    pairs: list[WriterPair] = []
    for buf, (readers, writers) in users.items():
        kind = kinds.get(buf)
        if kind is None or kind in READONLY_KINDS:
            continue
        for r in readers:
            others = tuple(w for w in writers if w != r)
            if others:
                reads.append(ReadObligation(r, buf, others, kind is BufferKind.KV_CACHE))
        pairs.extend(
            WriterPair(a, b, buf)
            for n, a in enumerate(writers)
            for b in writers[n + 1 :]
            if footprints_overlap(tasks[a], tasks[b])
        )
    reads.sort(key=lambda o: (o.reader, o.buffer))
    return ProgramView(tasks, dict(producers), queue_prev, reads, pairs, _page_shares(prog), dict(users))


def _page_shares(prog: MegakernelProgram) -> list[PageShare]:
    if prog.pages is None:
        return []
    by_page: dict[int, list[int]] = defaultdict(list)
    for buf, page in sorted(prog.pages.buffer_to_page.items()):
        if type(buf) is int and type(page) is int:
            by_page[page].append(buf)
    return [
        PageShare(page, a, b)
        for page, bufs in by_page.items()
        for n, a in enumerate(bufs)
        for b in bufs[n + 1 :]
    ]
