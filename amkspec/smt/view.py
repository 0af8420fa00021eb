"""A normalised, index-based view of a program for the Z3 encoding (spec §2, §3).

The IR model may hold broken programs (dangling ids, odd types); the encoding
needs a program whose executions are well defined. :func:`build_view` turns a
:class:`~amkspec.ir.MegakernelProgram` into tasks addressed by list position,
with producers per counter, counter ``init`` values, SM-queue predecessors and
the read/write obligations the queries discharge, or raises :class:`Unencodable`
with the reason. Dangling references keep their meaning in the execution model: a
wait on a counter nobody increments never holds, an unknown buffer is not tracked.

Which elements a task reads and writes comes from :mod:`amkspec.footprint`
(the validator's footprint): a task *reads* a buffer when its read region is not
empty, *writes* it when its write region is not empty, a read obligation names the
writers whose regions overlap the reader's, and two writers form a pair when their
write regions overlap. Read-only kinds are tracked too: a task writing one races
with its readers (R307).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable

import attrs

from amkspec.footprint import Memo, Region, task_footprint, uncovered
from amkspec.ir import AmkspecError, Buffer, BufferKind, MegakernelProgram


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
    read_regions: dict[int, Region] = attrs.field(eq=False, repr=False, factory=dict)
    write_regions: dict[int, Region] = attrs.field(eq=False, repr=False, factory=dict)


@attrs.frozen
class ReadObligation:
    """Task ``reader`` reads ``buffer``; each of ``writers`` (whose writes overlap the read) must end
    before it starts. ``unwritten``: some element it reads is written by no other task."""

    reader: int
    buffer: int
    writers: tuple[int, ...]
    kv: bool
    unwritten: bool = False


@attrs.frozen
class WriterPair:
    """Two tasks whose write footprints on ``buffer`` overlap (spec §3.3, write-after-write)."""

    a: int
    b: int
    buffer: int


@attrs.frozen
class PageShare:
    """Buffers ``a`` and ``b`` occupy the same page (spec §1.6, page reuse)."""

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
    init: dict[int, int] = attrs.Factory(dict)
    """counter id → its ``init`` value (a counter starts there, spec §1.5)."""

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


def _tasks(prog: MegakernelProgram, buffers: dict[int, Buffer]) -> list[TaskView]:
    seen: set[int] = set()
    memo = Memo()
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
        fp = task_footprint(t, buffers, memo)
        reads = {b: r for b, r in fp.reads.items() if not r.is_empty}
        writes = {b: r for b, r in fp.writes.items() if not r.is_empty}
        out.append(
            TaskView(
                index,
                tid,
                t.label,
                _int(t.out_counter, f"task {tid} out_counter"),
                waits,
                tuple(reads),
                tuple(writes),
                sm,
                reads,
                writes,
            )
        )
    return out


def build_view(prog: MegakernelProgram) -> ProgramView:
    """Index ``prog`` for the encoding; raises :class:`Unencodable`."""
    buffers: dict[int, Buffer] = {}
    for record in prog.buffers:
        if type(record.id) is int and record.id not in buffers:
            buffers[record.id] = record
    tasks = _tasks(prog, buffers)
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
    reads: list[ReadObligation] = []
    pairs: list[WriterPair] = []
    for buf, (readers, writers) in users.items():
        kind = buffers[buf].kind if buf in buffers else None
        if kind is None:
            continue
        reads.extend(_read_obligations(tasks, buffers[buf], readers, writers))
        pairs.extend(
            WriterPair(a, b, buf)
            for n, a in enumerate(writers)
            for b in writers[n + 1 :]
            if tasks[a].write_regions[buf].overlaps(tasks[b].write_regions[buf])
        )
    reads.sort(key=lambda o: (o.reader, o.buffer))
    init: dict[int, int] = {}
    for c in prog.counters:  # the first record of an id wins, as everywhere else
        if type(c.id) is int and c.id not in init:
            init[c.id] = c.init if type(c.init) is int else 0
    first_write = {b: min(ws) for b, (_, ws) in users.items() if ws}
    return ProgramView(
        tasks, dict(producers), queue_prev, reads, pairs, _page_shares(prog, first_write), dict(users), init
    )


def _read_obligations(
    tasks: list[TaskView], buf: Buffer, readers: list[int], writers: list[int]
) -> list[ReadObligation]:
    """One obligation per reader: the other writers its read overlaps, and whether some element it
    reads of a fresh (ACTIVATION/IO_OUTPUT) buffer is written by no other task."""
    out = []
    fresh = buf.kind in (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT)
    for r in readers:
        region = tasks[r].read_regions[buf.id]
        others = [w for w in writers if w != r]
        overlapping = tuple(w for w in others if region.overlaps(tasks[w].write_regions[buf.id]))
        gap = fresh and bool(
            uncovered(region, [tasks[w].write_regions[buf.id] for w in others], tuple(buf.shape))
        )
        if overlapping or gap:
            out.append(ReadObligation(r, buf.id, overlapping, buf.kind is BufferKind.KV_CACHE, gap))
    return out


def _page_shares(prog: MegakernelProgram, first_write: dict[int, int]) -> list[PageShare]:
    """Consecutive occupants of each page, ordered by their first writer (list position): when
    every use of one occupant happens-before every write of the next, the live ranges of all
    occupants are ordered (happens-before is transitive), so consecutive pairs suffice and the
    obligations stay linear in the page table."""
    if prog.pages is None or not isinstance(prog.pages.buffer_to_page, dict):
        return []
    by_page: dict[int, list[int]] = defaultdict(list)
    for buf, page in prog.pages.buffer_to_page.items():
        if type(buf) is int and type(page) is int and buf in first_write:
            by_page[page].append(buf)
    shares: list[PageShare] = []
    for page, bufs in sorted(by_page.items()):
        bufs.sort(key=lambda b: (first_write[b], b))
        shares.extend(PageShare(page, a, b) for a, b in itertools.pairwise(bufs))
    return shares
