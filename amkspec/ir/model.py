"""The data model of a megakernel program (spec §1, §5).

Every record is an attrs class that can *represent* a broken program (a wait on
a missing counter, a zero threshold, an id that is not its list position):
loading never judges, :func:`amkspec.validate` does. Each record keeps the
fields a newer writer added in ``extra`` so that they survive a round trip.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from amkspec.ir import graph
from amkspec.ir.enums import (
    ABI_VERSION,
    IR_VERSION,
    WEIGHT_KINDS,
    BufferKind,
    DType,
    InstructionKind,
    MemSpace,
)
from amkspec.ir.targets import GpuTarget

Extra = dict[str, Any]


def _extra() -> Any:
    return attrs.field(factory=dict, repr=False, kw_only=True)


def _to_shape(dims: Iterable[int]) -> tuple[int, ...]:
    return tuple(dims)


@attrs.define
class Buffer:
    """A named tensor (spec §1.3). ``source`` is the state-dict key of a WEIGHT/CONST."""

    id: int
    name: str
    kind: BufferKind
    dtype: DType
    shape: tuple[int, ...] = attrs.field(converter=_to_shape)
    space: MemSpace = MemSpace.HBM
    source: str | None = None
    extra: Extra = _extra()

    @property
    def rank(self) -> int:
        """Number of dimensions (spec §1.3); a scalar has rank 0."""
        return len(self.shape)

    @property
    def numel(self) -> int:
        """Number of logical elements (the product of ``shape``; 1 for a scalar)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Storage bytes, rounded up for packed sub-byte dtypes (spec §1.2)."""
        return self.dtype.nbytes(self.numel)

    def contiguous_strides(self) -> tuple[int, ...]:
        """Row-major element strides, the ``amk_buffer_t.stride`` of spec §8."""
        strides: list[int] = []
        step = 1
        for dim in reversed(self.shape):
            strides.append(step)
            step *= dim
        return tuple(reversed(strides))


@attrs.define
class Wait:
    """Do not start until ``counters[counter] >= threshold`` (spec §1.5)."""

    counter: int
    threshold: int
    extra: Extra = _extra()


@attrs.define
class Task:
    """A DAG node: one ABI instruction invocation on one SM (spec §1.4)."""

    id: int
    op: InstructionKind
    inputs: list[int]
    outputs: list[int]
    out_counter: int
    waits: list[Wait] = attrs.Factory(list)
    params: dict[str, Any] = attrs.Factory(dict)
    sm: int | None = None
    est_bytes: int = 0
    est_flops: int = 0
    label: str = ""
    extra: Extra = _extra()

    def describe(self) -> str:
        """``id:label`` as diagnostics name a task."""
        return f"{self.id}:{self.label}" if self.label else f"{self.id}:{self.op.name}"


@attrs.define
class Counter:
    """A monotonic uint32 synchronisation counter (spec §1.5); ``init`` must be 0."""

    id: int
    init: int = 0
    note: str = ""
    extra: Extra = _extra()


@attrs.define
class Page:
    """A physical scratch slot that activations are bound to (spec §1.6)."""

    id: int
    space: MemSpace
    nbytes: int
    live_start: int = -1
    live_end: int = -1
    extra: Extra = _extra()


@attrs.define
class PageAllocation:
    """The allocator's output: buffer id → page id, and the pages (spec §1.6)."""

    buffer_to_page: dict[int, int] = attrs.Factory(dict)
    pages: list[Page] = attrs.Factory(list)
    extra: Extra = _extra()

    @property
    def total_scratch_bytes(self) -> int:
        """Sum of the pages' sizes."""
        return sum(p.nbytes for p in self.pages)


SmAssignment = str | dict[int, int]


@attrs.define
class ScheduleConfig:
    """The Loop-2 search point a program was lowered from (spec §5)."""

    tiling: dict[str, dict[str, int]] = attrs.Factory(dict)
    fusion_grouping: list[list[str]] = attrs.Factory(list)
    sm_assignment: SmAssignment = "load_balance"
    pipelining_depth: int = 2
    page_allocation: str = "graph_color"
    threads_per_block: int = 256
    smem_bytes_per_block: int = 0
    extra: Extra = _extra()


@attrs.define(kw_only=True)
class MegakernelProgram:
    """A complete megakernel schedule (spec §1). Fields are in on-disk key order."""

    ir_version: str = IR_VERSION
    abi_version: str = ABI_VERSION
    meta: dict[str, Any] = attrs.Factory(dict)
    target: GpuTarget | None = None
    buffers: list[Buffer] = attrs.Factory(list)
    counters: list[Counter] = attrs.Factory(list)
    tasks: list[Task] = attrs.Factory(list)
    pages: PageAllocation | None = None
    config: ScheduleConfig | None = None
    extra: Extra = _extra()

    def buffer_by_id(self) -> dict[int, Buffer]:
        """Buffer id → buffer (spec §1.3); a later duplicate id wins."""
        return {b.id: b for b in self.buffers}

    def total_weight_bytes(self) -> int:
        """Bytes of WEIGHT and CONST buffers: the decode bandwidth bound (spec §1.6, §5.2)."""
        return sum(b.nbytes for b in self.buffers if b.kind in WEIGHT_KINDS)

    def total_scratch_bytes(self) -> int:
        """Scratch bytes: the pages when allocated, else every ACTIVATION's own bytes."""
        if self.pages is not None:
            return self.pages.total_scratch_bytes
        return sum(b.nbytes for b in self.buffers if b.kind is BufferKind.ACTIVATION)

    def producers_by_counter(self) -> dict[int, list[int]]:
        """:func:`amkspec.ir.graph.producers_by_counter` (spec §2)."""
        return graph.producers_by_counter(self)

    def writers_by_buffer(self) -> dict[int, list[int]]:
        """:func:`amkspec.ir.graph.writers_by_buffer` (spec §2)."""
        return graph.writers_by_buffer(self)

    def dependency_edges(self) -> list[tuple[int, int]]:
        """:func:`amkspec.ir.graph.dependency_edges` (spec §2)."""
        return graph.dependency_edges(self)

    def topological_order(self) -> list[int] | None:
        """:func:`amkspec.ir.graph.topological_order` (spec §2)."""
        return graph.topological_order(self)

    def ops(self) -> set[InstructionKind]:
        """The opcodes the program's tasks use (spec §7)."""
        return {t.op for t in self.tasks}
