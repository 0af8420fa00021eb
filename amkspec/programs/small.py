"""Small hand-written programs, each showing one thing a VM must do (spec §2, §7): a scaled chain
(or its race), two GEMV tiles under one counter, a KV append, a reused page, a bound weight, an
embedding row appended to a KV cache.
"""

from __future__ import annotations

from typing import Any

from amkspec.ir import (
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
)

K = InstructionKind


def scale_chain(scale_waits: bool = True, **params: Any) -> MegakernelProgram:
    """``y = 2·x`` then ``z = 3·y``; without ``scale_waits`` the second task does not wait (a race)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    first = b.add_task(K.MUL, [x], [y], params={"scale": 2.0}, label="double")
    b.add_task(K.MUL, [y], [z], waits=[b.after(first)] if scale_waits else [], params={"scale": 3.0},
               label="triple")
    return b.build()


def two_tiles() -> MegakernelProgram:
    """Two GEMV tiles writing disjoint halves of one output under one shared counter."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 3))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (4, 3))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("y (2 tiles)")
    for i in range(2):
        b.add_task(K.GEMV_TILE, [x, w], [y], out_counter=c, params={"K": 3, "N_tile": 2, "n_off": 2 * i},
                   label=f"y[t{i}]")
    return b.build()


def kv_snapshot(pos: int = 0) -> MegakernelProgram:
    """Append ``x`` to a KV cache at ``pos`` and copy the whole cache to an output."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 1, 2))
    kc = b.new_buffer("kc", BufferKind.KV_CACHE, DType.F32, (4, 1, 2))
    out = b.new_buffer("snapshot", BufferKind.IO_OUTPUT, DType.F32, (4, 1, 2))
    append = b.add_task(K.KV_APPEND, [x, kc], [kc], params={"pos": pos}, label="append")
    b.add_task(K.COPY, [kc], [out], waits=[b.after(append)], label="snapshot")
    return b.build()


def paged_pair(reuse_after_read: bool = True) -> MegakernelProgram:
    """``a = 2·x`` and ``b = 3·a`` share no page; ``c = a + x`` lives on ``a``'s page.

    With ``reuse_after_read`` the write of ``c`` waits for ``b`` (the last reader of ``a``), so
    the reuse is safe; without it the write of ``c`` may clobber ``a`` before ``b`` reads it.
    """
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    a = b.new_buffer("a", BufferKind.ACTIVATION, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_buffer("c", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    t0 = b.add_task(K.MUL, [x], [a], params={"scale": 2.0}, label="a")
    t1 = b.add_task(K.MUL, [a], [y], waits=[b.after(t0)], params={"scale": 3.0}, label="y")
    t2 = b.add_task(K.MUL, [x], [c], waits=[b.after(t1)] if reuse_after_read else [],
                    params={"scale": 5.0}, label="c")
    b.add_task(K.COPY, [c], [z], waits=[b.after(t2)], label="z")
    pages = PageAllocation({a: 0, c: 0}, [Page(0, MemSpace.HBM, 16, 0, 3)])
    return b.build(pages=pages)


def add_weight() -> MegakernelProgram:
    """``y = x + w``: one input, one weight named ``w`` (which a VM may keep bound between launches)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(K.ADD, [x, w], [y], label="add")
    return b.build()


def embed_append(pos: int = 1) -> MegakernelProgram:
    """Row ``ids[0]`` of the weight ``tab`` (5 × 2) appended to the KV cache ``kc`` at ``pos``: an id
    outside the table fails the launch after it has started (a data error no validator sees)."""
    b = ProgramBuilder()
    ids = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,))
    tab = b.new_buffer("tab", BufferKind.WEIGHT, DType.F32, (5, 2))
    row = b.new_buffer("row", BufferKind.ACTIVATION, DType.F32, (1, 1, 2))
    kc = b.new_buffer("kc", BufferKind.KV_CACHE, DType.F32, (4, 1, 2))
    embed = b.add_task(K.EMBED, [ids, tab], [row], params={"hidden": 2}, label="embed")
    b.add_task(K.KV_APPEND, [row, kc], [kc], waits=[b.after(embed)], params={"pos": pos}, label="append")
    return b.build()
