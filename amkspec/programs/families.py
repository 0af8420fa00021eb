"""Sized program families (the benchmarks measure them; the same programs for amkspec and the original).

- :func:`decoder_layers`: decoder-like layers (RMSNORM, tiled GEMV projections under one counter,
  SILU_MUL, residual ADD that reads the previous residual only *transitively*), round-robin SMs, so
  every obligation does real work: happens-before queries, the SM-queue rule, all-join waits;
- :func:`gemv_chain`: a long dependency chain of tiled projections and adds (deep, narrow);
- :func:`wide`: one projection split into thousands of tiles under one counter, then one reader
  (the original's write-after-write check is quadratic in the tiles of one buffer);
- :func:`paged_copy_chain`: a long chain whose pages are reused, with one clobber (a page race).

``meta.model`` of the first three is ``"benchmarks.<family>"`` with the family's old name
(``layered``, ``chain``, ``wide``): a provenance tag, kept literal.
"""

from __future__ import annotations

from amkspec.ir import (
    TARGETS,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
    Wait,
)

K = InstructionKind

F32 = DType.F32

HIDDEN = 64

def tiled_projection(b: ProgramBuilder, name: str, x: int, k: int, n: int, tiles: int,
                     waits: list[Wait]) -> int:
    """``tiles`` GEMV tiles of ``x @ W.T`` into a new ``[1, n]`` activation, sharing one counter."""
    w = b.new_buffer(name + ".w", BufferKind.WEIGHT, F32, (n, k))
    out = b.new_buffer(name, BufferKind.ACTIVATION, F32, (1, n))
    counter = b.new_counter(name)
    width = n // tiles
    for i in range(tiles):
        b.add_task(K.GEMV_TILE, [x, w], [out], out_counter=counter, waits=waits,
                   params={"K": k, "N_tile": width, "n_off": i * width}, label=f"{name}[t{i}]")
    return out

def _finish(b: ProgramBuilder, h: int, waits: list[Wait], family: str,
            width: int = HIDDEN) -> MegakernelProgram:
    """Copy ``h`` to the program's output, assign SMs round-robin, target the H100."""
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, F32, (1, width))
    b.add_task(K.COPY, [h], [out], waits=waits, label="out")
    target = TARGETS["h100"]
    for task in b.tasks:
        task.sm = task.id % target.num_sms
    return b.build(meta={"gpu": "h100", "model": f"benchmarks.{family}"}, target=target)

def decoder_layers(n_tasks: int, tiles: int = 8) -> MegakernelProgram:
    """A valid layered decoder of about ``n_tasks`` tasks (2·tiles + 3 tasks per layer)."""
    b = ProgramBuilder()
    wide = HIDDEN * tiles // 4
    table = b.new_buffer("table", BufferKind.WEIGHT, F32, (1, HIDDEN))
    idx = b.new_buffer("idx", BufferKind.IO_INPUT, DType.I32, (1,))
    h = b.new_buffer("h0", BufferKind.ACTIVATION, F32, (1, HIDDEN))
    b.add_task(K.EMBED, [idx, table], [h], params={"hidden": HIDDEN}, label="embed")
    h_wait, layer, per_layer = b.after(0), 0, 2 * tiles + 3
    while len(b.tasks) + per_layer + 1 <= max(n_tasks, per_layer + 2):
        p = f"L{layer}."
        nw = b.new_buffer(p + "norm.w", BufferKind.WEIGHT, F32, (HIDDEN,))
        normed = b.new_buffer(p + "normed", BufferKind.ACTIVATION, F32, (1, HIDDEN))
        t = b.add_task(K.RMSNORM, [h, nw], [normed], waits=[h_wait],
                       params={"eps": 1e-6, "hidden": HIDDEN}, label=p + "norm")
        gate = tiled_projection(b, p + "gate", normed, HIDDEN, wide, tiles, [b.after(t)])
        act = b.new_buffer(p + "act", BufferKind.ACTIVATION, F32, (1, wide))
        a = b.add_task(K.SILU_MUL, [gate, gate], [act], waits=[b.join(b.tasks[-1].out_counter)],
                       label=p + "act")
        down = tiled_projection(b, p + "down", act, wide, HIDDEN, tiles, [b.after(a)])
        h_next = b.new_buffer(f"h{layer + 1}", BufferKind.ACTIVATION, F32, (1, HIDDEN))
        r = b.add_task(K.ADD, [h, down], [h_next], waits=[b.join(b.tasks[-1].out_counter)],
                       label=p + "residual")
        h, h_wait, layer = h_next, b.after(r), layer + 1
    return _finish(b, h, [h_wait], "layered")

def gemv_chain(n_tasks: int, tiles: int = 4) -> MegakernelProgram:
    """About ``n_tasks`` tasks: per step ``tiles`` GEMV tiles under one counter, then an ADD."""
    b = ProgramBuilder()
    h = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, HIDDEN))
    waits: list[Wait] = []
    step = 0
    while len(b.tasks) + tiles + 2 <= n_tasks:
        y = tiled_projection(b, f"proj{step}", h, HIDDEN, HIDDEN, tiles, waits)
        out = b.new_buffer(f"h{step}", BufferKind.ACTIVATION, F32, (1, HIDDEN))
        t = b.add_task(K.ADD, [h, y], [out], waits=[*waits, b.join(b.tasks[-1].out_counter)],
                       label=f"add{step}")
        h, waits, step = out, [b.after(t)], step + 1
    return _finish(b, h, waits, "chain")

def wide(tiles: int) -> MegakernelProgram:
    """One projection of ``tiles`` one-column GEMV tiles under one counter, read by one task."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, HIDDEN))
    y = tiled_projection(b, "proj", x, HIDDEN, tiles, tiles, [])
    return _finish(b, y, [b.join(b.tasks[-1].out_counter)], "wide", width=tiles)


def paged_copy_chain(n: int) -> MegakernelProgram:
    """A chain of ``n - 1`` COPY tasks through activations on four rotating HBM pages, then an ADD
    reading the first and the last, and an unordered ``clobber`` of page 0: a page-reuse race deep in
    a long chain (the ``pages`` family of ``benchmarks/explain_pages.py``)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    acts = [b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, 4)) for i in range(n)]
    prev = b.add_task(K.COPY, [x], [acts[0]], label="t0")
    for i in range(1, n - 1):
        prev = b.add_task(K.COPY, [acts[i - 1]], [acts[i]], waits=[b.after(prev)],
                          label=f"t{i}")
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(K.ADD, [acts[n - 2], acts[0]], [out], waits=[b.after(prev)], label="late")
    b.add_task(K.COPY, [x], [acts[n - 1]], label="clobber")
    pages = [Page(p, MemSpace.HBM, 16) for p in range(4)]
    mapping = {acts[i]: i % 4 for i in range(n - 1)}
    mapping[acts[n - 1]] = 0
    return b.build(pages=PageAllocation(mapping, pages))
