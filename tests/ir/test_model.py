"""Derived properties of the data model (spec §1.3, §1.6) and the one-screen summary."""

from __future__ import annotations

from amkspec.ir import (
    Buffer,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    Task,
    Wait,
    load,
)
from amkspec.ir.summary import one_line, ops_histogram, summarize
from tests.conftest import FIXTURES


def test_buffer_sizes_and_strides() -> None:
    b = Buffer(0, "kv", BufferKind.KV_CACHE, DType.F16, [256, 2, 16])
    assert b.shape == (256, 2, 16)
    assert (b.rank, b.numel, b.nbytes) == (3, 8192, 16384)
    assert b.contiguous_strides() == (32, 16, 1)
    scalar = Buffer(1, "s", BufferKind.CONST, DType.I4, ())
    assert (scalar.numel, scalar.nbytes, scalar.contiguous_strides()) == (1, 1, ())
    packed = Buffer(2, "q", BufferKind.WEIGHT, DType.I4, (3, 5))
    assert packed.nbytes == 8


def test_weight_and_scratch_bytes() -> None:
    prog = MegakernelProgram(buffers=[
        Buffer(0, "w", BufferKind.WEIGHT, DType.F32, (4, 4)),
        Buffer(1, "c", BufferKind.CONST, DType.F16, (4,)),
        Buffer(2, "a", BufferKind.ACTIVATION, DType.F32, (1, 4)),
        Buffer(3, "b", BufferKind.ACTIVATION, DType.F32, (1, 8)),
        Buffer(4, "k", BufferKind.KV_CACHE, DType.F32, (8, 4)),
    ])
    assert prog.total_weight_bytes() == 64 + 8
    assert prog.total_scratch_bytes() == 16 + 32
    prog.pages = PageAllocation({2: 0, 3: 0}, [Page(0, MemSpace.GLOBAL_SCRATCH, 32)])
    assert prog.total_scratch_bytes() == 32


def test_toy_figures_match_the_reference() -> None:
    prog = load(FIXTURES / "toy1L__default.json")
    assert prog.total_weight_bytes() == prog.meta["weight_bytes"] == 279296
    s = summarize(prog)
    assert (s["tasks"], s["buffers"], s["counters"], s["edges"]) == (27, 37, 22, 33)
    assert s["acyclic"] and s["target"] == "rtx5090" and s["bandwidth_bound_us"] == 0.3117
    assert s["ops"]["GEMV_TILE"] == 13 and sum(s["ops"].values()) == 27
    assert one_line(prog).startswith("27 tasks, 37 buffers, 22 counters, 33 edges, 279296 weight bytes")
    two = load(FIXTURES / "toy2L__splitkv4__pos47.json")
    assert two.total_weight_bytes() == two.meta["weight_bytes"]


def test_summary_of_an_empty_and_a_cyclic_program() -> None:
    empty = MegakernelProgram()
    s = summarize(empty)
    assert (s["tasks"], s["edges"], s["acyclic"], s["target"]) == (0, 0, True, None)
    assert s["bandwidth_bound_us"] is None
    loop = MegakernelProgram(tasks=[Task(0, InstructionKind.NOP, [], [], 0, waits=[Wait(0, 1)])])
    assert ops_histogram(loop) == {"NOP": 1}
    s = summarize(loop)
    assert (s["edges"], s["acyclic"]) == (1, False)
