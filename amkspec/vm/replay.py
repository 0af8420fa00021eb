"""Replaying an event trace with shadow state (DESIGN.md execution model).

Each task has a start and an end event; tasks may overlap. A task reads its
inputs at its ``start`` and sees every buffer as of that moment; its writes
become visible only at its ``end`` (when its out_counter is incremented). So a
race witness — a trace where a reader starts before a writer of its input has
ended — replays to the stale value the reader would really see. Every read of a
transient buffer is recorded with the writers that had ended and those that had
not; the latter are the stale reads.

A task's write footprint is found by running it twice on private outputs
pre-filled with two different sentinels: the elements both runs agree on are
the ones it wrote. Only those are committed at ``end``, so sibling tiles that
overlap in time do not undo each other's columns.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import torch

from amkspec.ir import READONLY_KINDS
from amkspec.ir.graph import writers_by_buffer
from amkspec.proofs.trace import Event
from amkspec.vm.errors import TraceError
from amkspec.vm.plan import Plan

Tensor = torch.Tensor
RunTask = Callable[[int, list[Tensor], list[Tensor]], None]


@attrs.frozen
class ReadRecord:
    """Task ``reader`` read ``buffer`` at its start; ``complete``/``pending`` are the other writers
    of that buffer that had / had not ended. ``seen`` is the value read when some were pending."""

    reader: int
    buffer: int
    complete: tuple[int, ...]
    pending: tuple[int, ...]
    seen: Tensor | None = attrs.field(default=None, eq=False, repr=False)


@attrs.define
class ReplayReport:
    """Every read of a transient buffer during a replay, and the events actually executed."""

    reads: list[ReadRecord] = attrs.Factory(list)
    events: list[Event] = attrs.Factory(list)

    @property
    def stale_reads(self) -> list[ReadRecord]:
        """Reads that began before some writer of the buffer had ended (a data race observed)."""
        return [r for r in self.reads if r.pending]

    def describe(self, names: dict[int, str] | None = None) -> list[str]:
        """One line per stale read."""
        def name(i: int) -> str:
            return (names or {}).get(i, str(i))

        return [
            f"task {name(r.reader)} read buffer {r.buffer} before writer(s) "
            f"{', '.join(name(w) for w in r.pending)} ended"
            for r in self.stale_reads
        ]


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
        self.writers = {b: [self.pos[w] for w in ws] for b, ws in writers_by_buffer(plan.program).items()}
        kinds = {b.id: b.kind for b in plan.program.buffers}
        self.transient = {b for b, k in kinds.items() if k not in READONLY_KINDS}
        self.report = ReplayReport()

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
        self.in_flight.append(pos)
        self.report.events.append(Event("start", task.id))

    def _record_reads(self, pos: int) -> None:
        task = self.plan.program.tasks[pos]
        for b in dict.fromkeys(task.inputs):
            if b not in self.transient:
                continue
            others = [w for w in self.writers.get(b, []) if w != pos]
            ids = self.plan.program.tasks
            done = tuple(ids[w].id for w in others if self.ended[w])
            pending = tuple(ids[w].id for w in others if not self.ended[w])
            seen = self.bound[b].clone() if pending else None
            self.report.reads.append(ReadRecord(task.id, b, done, pending, seen))

    def end(self, pos: int) -> None:
        task = self.plan.program.tasks[pos]
        if not self.started[pos] or self.ended[pos]:
            raise TraceError(f"trace ends task {task.describe()}, which is not running")
        for b, value, mask in self.pending.pop(pos):
            self.bound[b].copy_(torch.where(mask, value, self.bound[b]))
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
                if not self.started[pos] and all(
                    self.values.get(w.counter, 0) >= w.threshold for w in task.waits
                ):
                    self.start(pos)
                    self.end(pos)
                    progress = True
        if not all(self.ended):
            raise self.plan.deadlock(self.ended, self.values)
