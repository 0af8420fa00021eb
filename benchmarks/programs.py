"""Program families the benchmarks measure (issue 13): the same programs for amkspec and the original.

- ``layered``: decoder-like layers (RMSNORM, tiled GEMV projections under one counter, SILU_MUL,
  residual ADD that reads the previous residual only *transitively*), round-robin SMs, so every
  obligation does real work: happens-before queries, the SM-queue rule, all-join waits;
- ``chain``: a long dependency chain of tiled projections and adds (deep, narrow);
- ``wide``: one projection split into thousands of tiles under one counter, then one reader
  (the original's write-after-write check is quadratic in the tiles of one buffer);
- ``lowered``: the original's own lowering of the toy models (``compat=True`` reproduces it byte
  for byte), across models, positions and tilings;
- ``fixtures``: the programs the original wrote itself (``tests/fixtures/amk``).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from amkspec.ir import (
    TARGETS,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    ScheduleConfig,
    Wait,
    loads,
)

K = InstructionKind
F32 = DType.F32
HIDDEN = 64
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "amk"


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


def layered(n_tasks: int, tiles: int = 8) -> MegakernelProgram:
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


def chain(n_tasks: int, tiles: int = 4) -> MegakernelProgram:
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


LOWERED = [  # (model, position, GEMV N_tile or None for the original's auto tiling, split-KV partitions)
    ("toy", 0, 64, 0), ("toy", 5, 16, 0), ("toy-2L", 0, 64, 0), ("toy-2L", 47, 64, 4),
    ("toy-2L", 100, 8, 0), ("medium", 0, 64, 0), ("medium", 31, 128, 2), ("medium", 7, None, 0),
]


def lowered() -> Iterator[tuple[str, str]]:
    """(name, JSON text) of the original's lowering of the toy models (``compat=True``)."""
    from amkspec.ir import dumps
    from amkspec.lower import lower

    for model, pos, n_tile, parts in LOWERED:
        tiling: dict[str, dict[str, int]] = {}
        if n_tile is not None:
            tiling["gemv"] = {"N_tile": n_tile}
        if parts:
            tiling["attention"] = {"n_partitions": parts}
        config = ScheduleConfig(tiling=tiling) if tiling else None
        prog = lower(model, "h100", config, pos=pos, compat=True)
        yield f"{model} pos {pos} N_tile {n_tile or 'auto'}" + (f" split {parts}" if parts else ""), \
            dumps(prog)


def fixtures() -> Iterator[tuple[str, str]]:
    """(name, JSON text) of every program the original wrote (``tests/fixtures/amk``)."""
    for path in sorted(FIXTURES.glob("*.json*")):
        if path.name.endswith((".json", ".json.gz")) and "dtypes" not in path.name:
            raw = path.read_bytes()
            text = gzip.decompress(raw).decode() if path.suffix == ".gz" else raw.decode()
            loads(text)  # a program, not a side table
            yield path.name, text
