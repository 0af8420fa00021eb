"""Sized program families (the benchmarks measure them; the same programs for amkspec and the original).

- :func:`decoder_layers`: decoder-like layers (RMSNORM, tiled GEMV projections under one counter,
  SILU_MUL, residual ADD that reads the previous residual only *transitively*), round-robin SMs, so
  every obligation does real work: happens-before queries, the SM-queue rule, all-join waits;
- :func:`gemv_chain`: a long dependency chain of tiled projections and adds (deep, narrow);
- :func:`wide`: one projection split into thousands of tiles under one counter, then one reader
  (the original's write-after-write check is quadratic in the tiles of one buffer);
- :func:`paged_copy_chain`: a long chain whose pages are reused, with one clobber (a page race);
- :func:`mlp_layers`: MLP layers (RMSNORM, gate/up/down GEMV tiles, SILU_MUL, residual ADD);
- :func:`add_chain`: a Fibonacci-like chain of ADDs, each task waiting for the one before;
- :func:`nop_chain`, :func:`nop_layers`: NOP tasks without buffers, for the VM's scheduler.

``meta.model`` of the first three is ``"benchmarks.<family>"`` with the family's old name
(``layered``, ``chain``, ``wide``), of :func:`mlp_layers` ``"benchmarks/memory.py"`` and of
:func:`add_chain` ``"benchmarks.certificate"``: provenance tags, kept literal.
"""

from __future__ import annotations

from amkspec.ir import (
    TARGETS,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
    Task,
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


MLP_HIDDEN, MLP_INTER = 64, 256
"""The widths of :func:`mlp_layers`."""


def mlp_layers(n_tasks: int, tiles: int = 4) -> MegakernelProgram:
    """Layers of RMSNORM, gate/up/down GEMV tiles, SILU_MUL and a residual ADD (~``n_tasks`` tasks)."""
    b = ProgramBuilder()
    op, act, wt = InstructionKind, BufferKind.ACTIVATION, BufferKind.WEIGHT
    resid = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, MLP_HIDDEN))
    ready: list[Wait] = []
    layer = 0
    while len(b.tasks) < n_tasks:
        norm_w = b.new_buffer(f"L{layer}.norm", wt, DType.F32, (MLP_HIDDEN,))
        normed = b.new_buffer(f"L{layer}.n", act, DType.F32, (1, MLP_HIDDEN))
        norm = b.add_task(op.RMSNORM, [resid, norm_w], [normed], waits=ready,
                          params={"eps": 1e-6, "hidden": MLP_HIDDEN})
        after_norm = [Wait(b.tasks[norm].out_counter, 1)]
        halves = []
        for name in ("gate", "up"):
            w = b.new_buffer(f"L{layer}.{name}.w", wt, DType.F32, (MLP_INTER, MLP_HIDDEN))
            out = b.new_buffer(f"L{layer}.{name}", act, DType.F32, (1, MLP_INTER))
            c = b.new_counter(name)
            for t in range(tiles):
                width = MLP_INTER // tiles
                b.add_task(op.GEMV_TILE, [normed, w], [out], out_counter=c, waits=after_norm,
                           params={"K": MLP_HIDDEN, "N_tile": width, "n_off": t * width})
            halves.append((out, Wait(c, tiles)))
        mixed = b.new_buffer(f"L{layer}.act", act, DType.F32, (1, MLP_INTER))
        swiglu = b.add_task(op.SILU_MUL, [halves[0][0], halves[1][0]], [mixed], waits=[w for _, w in halves])
        after_swiglu = [Wait(b.tasks[swiglu].out_counter, 1)]
        down_w = b.new_buffer(f"L{layer}.down.w", wt, DType.F32, (MLP_HIDDEN, MLP_INTER))
        down = b.new_buffer(f"L{layer}.d", act, DType.F32, (1, MLP_HIDDEN))
        c = b.new_counter("down")
        for t in range(tiles):
            width = MLP_HIDDEN // tiles
            b.add_task(op.GEMV_TILE, [mixed, down_w], [down], out_counter=c, waits=after_swiglu,
                       params={"K": MLP_INTER, "N_tile": width, "n_off": t * width})
        kind = BufferKind.IO_OUTPUT if len(b.tasks) + 1 >= n_tasks else act
        summed = b.new_buffer(f"L{layer}.h", kind, DType.F32, (1, MLP_HIDDEN))
        add = b.add_task(op.ADD, [resid, down], [summed], waits=[*ready, Wait(c, tiles)])
        resid, ready, layer = summed, [Wait(b.tasks[add].out_counter, 1)], layer + 1
    return b.build(meta={"model": "benchmarks/memory.py"})  # a provenance tag, kept literal


ADD_WIDTH = 16
"""The width of :func:`add_chain`'s vectors."""


def add_chain(n_tasks: int) -> MegakernelProgram:
    """``h[i] = h[i-1] + h[i-2]``; task ``i`` waits on task ``i-1`` only."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, ADD_WIDTH))
    hs = [x, x]
    waits: list[Wait] = []
    for i in range(n_tasks - 1):
        h = b.new_buffer(f"h{i}", BufferKind.ACTIVATION, DType.F32, (1, ADD_WIDTH))
        t = b.add_task(InstructionKind.ADD, [hs[-1], hs[-2]], [h], waits=waits, label=f"add{i}")
        hs, waits = [hs[-1], h], [b.after(t)]
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, ADD_WIDTH))
    b.add_task(InstructionKind.COPY, [hs[-1]], [out], waits=waits, label="out")
    return b.build(meta={"model": "benchmarks.certificate"}, target=TARGETS["h100"])


def nop_chain(n: int) -> MegakernelProgram:
    """``n`` NOP tasks, each waiting for the one before (no buffers: scheduling only)."""
    tasks = [Task(i, InstructionKind.NOP, [], [], i, [Wait(i - 1, 1)] if i else []) for i in range(n)]
    return MegakernelProgram(counters=[Counter(i) for i in range(n)], tasks=tasks)


def nop_layers(n: int, width: int = 16) -> MegakernelProgram:
    """Layers of ``width`` NOP tasks under one counter, each layer waiting for all of the one before."""
    layers = n // width
    tasks = [
        Task(i, InstructionKind.NOP, [], [], i // width, [Wait(i // width - 1, width)] if i >= width else [])
        for i in range(layers * width)
    ]
    return MegakernelProgram(counters=[Counter(i) for i in range(layers)], tasks=tasks)
