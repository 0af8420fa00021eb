"""A small builder for writing programs by hand (spec §1).

>>> b = ProgramBuilder()
>>> x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
>>> w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16), source="w")
>>> y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 16))
>>> t = b.add_task(InstructionKind.GEMV_TILE, [x, w], [y], params={"K": 16, "N_tile": 16, "n_off": 0})
>>> prog = b.build()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from amkspec.ir.enums import WEIGHT_KINDS, BufferKind, DType, InstructionKind, MemSpace
from amkspec.ir.model import (
    Buffer,
    Counter,
    MegakernelProgram,
    PageAllocation,
    ScheduleConfig,
    Task,
    Wait,
)
from amkspec.ir.targets import GpuTarget

WaitSpec = Wait | tuple[int, int]


class ProgramBuilder:
    """Accumulates buffers, counters and tasks with ids equal to list positions."""

    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self.counters: list[Counter] = []
        self.tasks: list[Task] = []
        self._producers: dict[int, int] = {}

    def new_buffer(
        self,
        name: str,
        kind: BufferKind,
        dtype: DType,
        shape: Iterable[int],
        space: MemSpace = MemSpace.HBM,
        source: str | None = None,
    ) -> int:
        """Add a buffer and return its id. WEIGHT/CONST default ``source`` to ``name``."""
        if source is None and kind in WEIGHT_KINDS:
            source = name
        self.buffers.append(Buffer(len(self.buffers), name, kind, dtype, tuple(shape), space, source))
        return len(self.buffers) - 1

    def new_counter(self, note: str = "") -> int:
        """Add a counter (init 0) and return its id."""
        self.counters.append(Counter(len(self.counters), 0, note))
        return len(self.counters) - 1

    def add_task(
        self,
        op: InstructionKind,
        inputs: Iterable[int],
        outputs: Iterable[int],
        out_counter: int | None = None,
        waits: Iterable[WaitSpec] = (),
        params: Mapping[str, Any] | None = None,
        sm: int | None = None,
        label: str = "",
        est_bytes: int = 0,
        est_flops: int = 0,
    ) -> int:
        """Add a task and return its id; a fresh counter is made when ``out_counter`` is None."""
        if out_counter is None:
            out_counter = self.new_counter(label)
        task = Task(
            id=len(self.tasks),
            op=op,
            inputs=list(inputs),
            outputs=list(outputs),
            out_counter=out_counter,
            waits=[w if isinstance(w, Wait) else Wait(*w) for w in waits],
            params=dict(params or {}),
            sm=sm,
            est_bytes=est_bytes,
            est_flops=est_flops,
            label=label,
        )
        self.tasks.append(task)
        self._producers[out_counter] = self._producers.get(out_counter, 0) + 1
        return task.id

    def join(self, counter: int) -> Wait:
        """A wait for every producer of ``counter`` added so far through :meth:`add_task`
        (the all-join of spec §3.3)."""
        return Wait(counter, self._producers.get(counter, 0))

    def after(self, task_id: int) -> Wait:
        """A wait that orders after the given task (a join on its out_counter)."""
        return self.join(self.tasks[task_id].out_counter)

    def build(
        self,
        *,
        meta: Mapping[str, Any] | None = None,
        target: GpuTarget | None = None,
        config: ScheduleConfig | None = None,
        pages: PageAllocation | None = None,
    ) -> MegakernelProgram:
        """The program so far (records are shared with the builder, not copied)."""
        return MegakernelProgram(
            meta=dict(meta or {}),
            target=target,
            buffers=self.buffers,
            counters=self.counters,
            tasks=self.tasks,
            pages=pages,
            config=config,
        )
