"""Replaying an event trace with shadow state (spec §2.2, the execution model).

Each task has a start and an end event; tasks may overlap, except that tasks
assigned to one SM run one at a time in task-list order. A task reads its
inputs at its ``start`` and sees every buffer as of that moment; its writes
become visible only at its ``end`` (when its out_counter is incremented). So a
race witness — a trace where a reader starts before a writer of its input has
ended — replays to the stale value the reader would really see. Every read is
recorded with the other writers of the elements it reads (the footprints of
:mod:`amkspec.footprint`) that had ended and those that had not; the
latter, and reads of elements no other task writes at all (an ACTIVATION or
IO_OUTPUT gap, a task reading its own output), are the stale reads. Reads of
read-only kinds are recorded when some task writes them (spec §3.3, R307).

A task's write footprint is found by running it twice on private outputs
pre-filled with two different sentinels: the elements both runs agree on are
the ones it wrote. Only those are committed at ``end``, so sibling tiles that
overlap in time do not undo each other's columns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import torch

from amkspec.footprint import Footprint, Memo, task_footprint, uncovered
from amkspec.ir import BufferKind, MegakernelProgram, Task
from amkspec.ir.trace import Event
from amkspec.vm.errors import TraceError
from amkspec.vm.plan import Plan

Tensor = torch.Tensor
RunTask = Callable[[int, list[Tensor], list[Tensor]], None]


@attrs.frozen
class ReadRecord:
    """Task ``reader`` read ``buffer`` at its start; ``complete``/``pending`` are the other writers
    of that buffer that had / had not ended; ``clobbered_by`` is the task that last wrote another
    buffer sharing its page, or was writing one as the read began; ``unwritten`` says some element
    it reads of an ACTIVATION/IO_OUTPUT buffer is written by no other task. ``seen`` is the value
    read when the read was stale."""

    reader: int
    buffer: int
    complete: tuple[int, ...]
    pending: tuple[int, ...]
    clobbered_by: int | None = None
    unwritten: bool = False
    seen: Tensor | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def stale(self) -> bool:
        return bool(self.pending) or self.clobbered_by is not None or self.unwritten


@attrs.frozen
class WriteConflict:
    """Tasks ``first`` and ``second`` were both running with writes to the same ``elements`` of
    ``buffer`` pending: whichever ends last decides the value (a write race)."""

    first: int
    second: int
    buffer: int
    elements: int


@attrs.define
class ReplayReport:
    """Every read of a transient buffer during a replay, and the events actually executed."""

    reads: list[ReadRecord] = attrs.Factory(list)
    conflicts: list[WriteConflict] = attrs.Factory(list)
    events: list[Event] = attrs.Factory(list)

    @property
    def stale_reads(self) -> list[ReadRecord]:
        """Reads that saw data other than what the program means them to see (a race observed)."""
        return [r for r in self.reads if r.stale]

    @property
    def clean(self) -> bool:
        """No stale read and no write conflict."""
        return not self.stale_reads and not self.conflicts

    def describe(self, program: MegakernelProgram | None = None) -> list[str]:
        """One line per stale read and per write conflict (tasks as ``id:label`` and buffers by
        name when ``program`` is given)."""
        tasks = {t.id: t.describe() for t in program.tasks} if program else {}
        buffers = {b.id: f"{b.id}:{b.name}" for b in program.buffers} if program else {}

        def task(i: int) -> str:
            return tasks.get(i, str(i))

        lines = []
        for r in self.stale_reads:
            if r.pending:
                why = f" before writer(s) {', '.join(task(w) for w in r.pending)} ended"
            elif r.clobbered_by is not None:
                why = f" after task {task(r.clobbered_by)} overwrote its page"
            else:
                why = ", which no task writes"
            lines.append(f"task {task(r.reader)} read buffer {buffers.get(r.buffer, r.buffer)}{why}")
        lines.extend(
            f"tasks {task(c.first)} and {task(c.second)} overlapped writing {c.elements} element(s) "
            f"of buffer {buffers.get(c.buffer, c.buffer)}"
            for c in self.conflicts
        )
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: stale reads and write conflicts."""
        return {
            "stale_reads": [
                {"reader": r.reader, "buffer": r.buffer, "pending": list(r.pending),
                 "complete": list(r.complete), "clobbered_by": r.clobbered_by, "unwritten": r.unwritten}
                for r in self.stale_reads
            ],
            "conflicts": [attrs.asdict(c) for c in self.conflicts],
        }


def _pages(program: MegakernelProgram) -> dict[int, int]:
    """Paged ACTIVATION buffer id → page id (the buffers the VM binds to shared page storage)."""
    if program.pages is None:
        return {}
    kinds = {b.id: b.kind for b in program.buffers}
    return {b: p for b, p in program.pages.buffer_to_page.items() if kinds.get(b) is BufferKind.ACTIVATION}


def _queue_predecessors(tasks: list[Task]) -> list[int | None]:
    """For each task with an SM, the position of the task before it in that SM's queue (list order)."""
    last: dict[int, int] = {}
    prev: list[int | None] = []
    for pos, task in enumerate(tasks):
        prev.append(last.get(task.sm) if task.sm is not None else None)
        if task.sm is not None:
            last[task.sm] = pos
    return prev


def _written_mask(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_floating_point:
        af, bf = a.float(), b.float()
        return (af == bf) | (af.isnan() & bf.isnan())
    return a == b


class ShadowReplay:
    """Executes start/end events of one launch over the bound tensors (the visible memory)."""

    def __init__(self, plan: Plan, bound: dict[int, Tensor], run_task: RunTask) -> None:
        self.plan, self.bound, self.run_task = plan, bound, run_task
        tasks = plan.program.tasks
        self.pos = {t.id: i for i, t in enumerate(tasks)}
        self.values = dict(plan.init)
        self.started = [False] * len(tasks)
        self.ended = [False] * len(tasks)
        self.pending: dict[int, list[tuple[int, Tensor, Tensor]]] = {}
        self.in_flight: list[int] = []
        self.order: list[int] = []
        self.task_s: dict[int, float] = {}
        buffers = {b.id: b for b in plan.program.buffers}
        memo = Memo()
        self.fps: list[Footprint] = [task_footprint(t, buffers, memo) for t in tasks]
        self.writers: dict[int, list[int]] = {}
        for pos, fp in enumerate(self.fps):
            for b, region in fp.writes.items():
                if not region.is_empty:
                    self.writers.setdefault(b, []).append(pos)
        self.shapes = {b.id: tuple(b.shape) for b in plan.program.buffers}
        self.fresh = {
            b.id for b in plan.program.buffers if b.kind in (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT)
        }
        self.report = ReplayReport()
        self.queue_prev = _queue_predecessors(plan.program.tasks)
        self.page_of = _pages(plan.program)
        self.page_last: dict[int, tuple[int, int]] = {}

    def _task(self, event: Event) -> int:
        pos = self.pos.get(event.task)
        if pos is None:
            raise TraceError(f"trace names task {event.task}, which the program does not have")
        return pos

    def start(self, pos: int) -> None:
        task = self.plan.program.tasks[pos]
        if self.started[pos]:
            raise TraceError(f"trace starts task {task.describe()} twice")
        for w in task.waits:
            if self.values.get(w.counter, 0) < w.threshold:
                raise TraceError(
                    f"trace starts task {task.describe()} while counter {w.counter} is "
                    f"{self.values.get(w.counter, 0)} < {w.threshold}"
                )
        prev = self.queue_prev[pos]
        if prev is not None and not self.ended[prev]:
            raise TraceError(
                f"trace starts task {task.describe()} before {self.plan.program.tasks[prev].describe()}, "
                f"earlier in the queue of SM {task.sm}, has ended"
            )
        self.started[pos] = True
        self.order.append(task.id)
        self._record_reads(pos)
        inputs = [self.bound[b].clone() for b in task.inputs]
        t0 = time.perf_counter()
        runs = []
        for fill in (0, 1):
            outs = {b: torch.full_like(self.bound[b], fill) for b in task.outputs}
            self.run_task(pos, inputs, [outs[b] for b in task.outputs])
            runs.append(outs)
        self.task_s[task.id] = time.perf_counter() - t0
        self.pending[pos] = [(b, runs[0][b], _written_mask(runs[0][b], runs[1][b])) for b in runs[0]]
        self._record_conflicts(pos)
        self.in_flight.append(pos)
        self.report.events.append(Event("start", task.id))

    def _record_reads(self, pos: int) -> None:
        tasks = self.plan.program.tasks
        for b, region in self.fps[pos].reads.items():
            if region.is_empty or (b not in self.fresh and b not in self.writers):
                continue
            others = [w for w in self.writers.get(b, []) if w != pos]
            touching = [w for w in others if region.overlaps(self.fps[w].write(b))]
            done = tuple(tasks[w].id for w in touching if self.ended[w])
            pending = tuple(tasks[w].id for w in touching if not self.ended[w])
            clobber = self._clobber(b)
            unwritten = b in self.fresh and bool(
                uncovered(region, [self.fps[w].write(b) for w in others], self.shapes[b])
            )
            stale = bool(pending) or clobber is not None or unwritten
            seen = self.bound[b].clone() if stale else None
            self.report.reads.append(ReadRecord(tasks[pos].id, b, done, pending, clobber, unwritten, seen))

    def _clobber(self, b: int) -> int | None:
        """The task that overwrote (or is overwriting) ``b``'s page through another buffer, if any."""
        page = self.page_of.get(b)
        if page is None:
            return None
        for pos in self.in_flight:
            if any(ob != b and self.page_of.get(ob) == page for ob, _, _ in self.pending[pos]):
                return self.plan.program.tasks[pos].id
        last = self.page_last.get(page)
        return last[1] if last is not None and last[0] != b else None

    def _record_conflicts(self, pos: int) -> None:
        tasks = self.plan.program.tasks
        mine = {b: mask for b, _, mask in self.pending[pos]}
        for other in self.in_flight:
            for b, _, mask in self.pending[other]:
                if b in mine and mine[b].shape == mask.shape:
                    both = int((mine[b] & mask).sum())
                    if both:
                        self.report.conflicts.append(WriteConflict(tasks[other].id, tasks[pos].id, b, both))

    def end(self, pos: int) -> None:
        task = self.plan.program.tasks[pos]
        if not self.started[pos] or self.ended[pos]:
            raise TraceError(f"trace ends task {task.describe()}, which is not running")
        for b, value, mask in self.pending.pop(pos):
            self.bound[b].copy_(torch.where(mask, value, self.bound[b]))
            if b in self.page_of:
                self.page_last[self.page_of[b]] = (b, task.id)
        self.ended[pos] = True
        self.in_flight.remove(pos)
        c = self.plan.counter_of[pos]
        self.values[c] = self.values.get(c, 0) + 1
        self.report.events.append(Event("end", task.id))

    def follow(self, trace: tuple[Event, ...]) -> None:
        for event in trace:
            pos = self._task(event)
            (self.start if event.kind == "start" else self.end)(pos)

    def finish(self) -> None:
        """End what is running, then run every task left, one at a time in list order."""
        for pos in list(self.in_flight):
            self.end(pos)
        progress = True
        while progress:
            progress = False
            for pos, task in enumerate(self.plan.program.tasks):
                prev = self.queue_prev[pos]
                if not self.started[pos] and (prev is None or self.ended[prev]) and all(
                    self.values.get(w.counter, 0) >= w.threshold for w in task.waits
                ):
                    self.start(pos)
                    self.end(pos)
                    progress = True
        if not all(self.ended):
            raise self.plan.deadlock(self.ended, self.values)
