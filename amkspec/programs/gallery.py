"""Small example programs with one synchronisation bug each, and scalable ones for benchmarks.

They feed the witness gallery of the docs, the tests and ``benchmarks/smt.py``.
Every program is shape-correct (spec §7), so the only findings are the bug
the example is named after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
ACT, OUT = BufferKind.ACTIVATION, BufferKind.IO_OUTPUT


def _start(b: ProgramBuilder) -> tuple[int, int]:
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16))
    return x, w


def _tile(
    b: ProgramBuilder,
    x: int,
    w: int,
    out: int,
    n_off: int,
    n: int = 8,
    *,
    label: str,
    out_counter: int | None = None,
) -> int:
    params = {"K": 16, "N_tile": n, "n_off": n_off}
    return b.add_task(K.GEMV_TILE, [x, w], [out], out_counter=out_counter, params=params, label=label)


def _partial_join(h_kind: BufferKind, reads_h: bool, label: str, example: str) -> MegakernelProgram:
    """Two tiles of ``h`` signal one counter; a COPY into ``y`` (of ``h``, or else of ``x``) waits
    for only one of them: a partial join, which the all-join rule of spec §3.3 rejects."""
    b = ProgramBuilder()
    x, w = _start(b)
    h = b.new_buffer("h", h_kind, DType.F32, (1, 16))
    y = b.new_buffer("y", OUT, DType.F32, (1, 16))
    c = b.new_counter("tiles of h")
    _tile(b, x, w, h, 0, out_counter=c, label="tile0")
    _tile(b, x, w, h, 8, out_counter=c, label="tile1")
    b.add_task(K.COPY, [h if reads_h else x], [y], waits=[(c, 1)], label=label)
    return b.build(meta={"example": example})


def partial_join_race() -> MegakernelProgram:
    """Two tiles signal one counter; the consumer reads their output after only one (spec §3.3)."""
    return _partial_join(ACT, True, "consume", "partial-join read race")


def kv_race() -> MegakernelProgram:
    """Attention waits for the K append but not for the V append (spec §3.3, KV ordering)."""
    b = ProgramBuilder()
    q = b.new_buffer("q", BufferKind.IO_INPUT, DType.F32, (1, 8))
    k = b.new_buffer("k", BufferKind.IO_INPUT, DType.F32, (1, 8))
    v = b.new_buffer("v", BufferKind.IO_INPUT, DType.F32, (1, 8))
    kc = b.new_buffer("k_cache", BufferKind.KV_CACHE, DType.F32, (4, 1, 8))
    vc = b.new_buffer("v_cache", BufferKind.KV_CACHE, DType.F32, (4, 1, 8))
    y = b.new_buffer("attn", OUT, DType.F32, (1, 8))
    ka = b.add_task(K.KV_APPEND, [k, kc], [kc], params={"pos": 1}, label="append_k")
    b.add_task(K.KV_APPEND, [v, vc], [vc], params={"pos": 1}, label="append_v")
    params = {"head_dim": 8, "kv_start": 0, "kv_len": 2, "scale": 8**-0.5, "n_heads": 1, "n_kv_heads": 1}
    b.add_task(K.ATTENTION_TILE, [q, kc, vc], [y], waits=[b.after(ka)], params=params, label="attention")
    return b.build(meta={"example": "KV cache read before its append"})


def overlapping_tiles() -> MegakernelProgram:
    """Two unordered GEMV tiles write overlapping columns of one buffer (write race)."""
    b = ProgramBuilder()
    x, w = _start(b)
    h = b.new_buffer("h", OUT, DType.F32, (1, 16))
    _tile(b, x, w, h, 0, 12, label="cols 0-12")
    _tile(b, x, w, h, 8, 8, label="cols 8-16")
    return b.build(meta={"example": "overlapping tiles"})


def threshold_too_high() -> MegakernelProgram:
    """A wait for two increments of a counter that only one task signals (deadlock)."""
    b = ProgramBuilder()
    x, w = _start(b)
    h = b.new_buffer("h", ACT, DType.F32, (1, 16))
    y = b.new_buffer("y", OUT, DType.F32, (1, 16))
    t0 = _tile(b, x, w, h, 0, 16, label="gemv")
    c = b.tasks[t0].out_counter
    b.add_task(K.COPY, [h], [y], waits=[(c, 2)], label="consume")
    return b.build(meta={"example": "unsatisfiable threshold"})


def sm_queue_deadlock() -> MegakernelProgram:
    """Passes the reference validator's pairwise SM-queue rule, yet the queues block (spec §3.2).

    ``first`` (SM 0) waits for ``relay`` (no SM), which waits for ``second``, queued
    behind ``first`` on SM 0: no edge joins two tasks of one SM, but the cycle
    first →queue→ second → relay → first does.
    """
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    a = [b.new_buffer(f"a{i}", ACT, DType.F32, (1, 16)) for i in range(3)]
    c_relay = b.new_counter("relay done")
    c_second = b.new_counter("second done")
    b.add_task(K.COPY, [a[2]], [a[0]], waits=[(c_relay, 1)], sm=0, label="first")
    b.add_task(K.COPY, [x], [a[1]], out_counter=c_second, sm=0, label="second")
    b.add_task(K.COPY, [a[1]], [a[2]], out_counter=c_relay, waits=[(c_second, 1)], label="relay")
    return b.build(meta={"example": "SM-queue deadlock"}, target=TARGETS["h100"])


def cycle() -> MegakernelProgram:
    """Two tasks that each wait for the other (a producer→consumer cycle)."""
    b = ProgramBuilder()
    a0 = b.new_buffer("a0", ACT, DType.F32, (1, 16))
    a1 = b.new_buffer("a1", ACT, DType.F32, (1, 16))
    c0, c1 = b.new_counter("ping"), b.new_counter("pong")
    b.add_task(K.COPY, [a1], [a0], out_counter=c0, waits=[(c1, 1)], label="ping")
    b.add_task(K.COPY, [a0], [a1], out_counter=c1, waits=[(c0, 1)], label="pong")
    return b.build(meta={"example": "cycle"})


def page_clobber() -> MegakernelProgram:
    """``h`` and ``g`` share a page; ``g`` is written while ``h`` still waits to be read."""
    b = ProgramBuilder()
    x, w = _start(b)
    h = b.new_buffer("h", ACT, DType.F32, (1, 16))
    g = b.new_buffer("g", ACT, DType.F32, (1, 16))
    y = b.new_buffer("y", OUT, DType.F32, (1, 16))
    z = b.new_buffer("z", OUT, DType.F32, (1, 16))
    t_h = _tile(b, x, w, h, 0, 16, label="write h")
    t_g = b.add_task(K.COPY, [x], [g], waits=[b.after(t_h)], label="write g")
    b.add_task(K.COPY, [h], [y], waits=[b.after(t_h)], label="read h")
    b.add_task(K.COPY, [g], [z], waits=[b.after(t_g)], label="read g")
    pages = PageAllocation({h: 0, g: 0}, [Page(0, MemSpace.GLOBAL_SCRATCH, 64)])
    return b.build(meta={"example": "page clobber"}, pages=pages)


def unwritten_read() -> MegakernelProgram:
    """A task reads an activation that no task writes."""
    b = ProgramBuilder()
    h = b.new_buffer("h", ACT, DType.F32, (1, 16))
    y = b.new_buffer("y", OUT, DType.F32, (1, 16))
    b.add_task(K.COPY, [h], [y], label="read h")
    return b.build(meta={"example": "read of a never-written buffer"})


def rule_only_partial_join() -> MegakernelProgram:
    """A partial wait on a shared counter whose producers' outputs the waiter never reads.

    The all-join rule (spec §3.3) rejects it, yet no execution misbehaves: a rule-only rejection.
    """
    return _partial_join(OUT, False, "early", "rule-only partial join")


EXAMPLES: dict[str, Callable[[], MegakernelProgram]] = {
    "partial-join read race": partial_join_race,
    "KV cache read before its append": kv_race,
    "overlapping tiles": overlapping_tiles,
    "unsatisfiable threshold": threshold_too_high,
    "SM-queue deadlock": sm_queue_deadlock,
    "cycle": cycle,
    "page clobber": page_clobber,
    "read of a never-written buffer": unwritten_read,
}
"""The bugs of the witness gallery, by title."""


def layered(n_tasks: int, bug: str | None = None, width: int = 4) -> MegakernelProgram:
    """About ``n_tasks`` tasks: layers of ``width`` GEMV tiles joined by one counter each.

    Each layer reads the previous layer's buffer after a full join. ``bug`` puts one
    defect in the last layer: ``"race"`` (a partial wait), ``"deadlock"`` (a threshold
    above the producer count). SMs are assigned round-robin in list order.
    """
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16 * width))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16 * width, 16 * width))
    layers = max(1, n_tasks // width)
    prev, wait = x, None
    for n in range(layers):
        last = n == layers - 1
        kind = OUT if last else ACT
        out = b.new_buffer(f"h{n}", kind, DType.F32, (1, 16 * width))
        c = b.new_counter(f"layer {n}")
        for j in range(width):
            waits: list[Wait | tuple[int, int]] = [] if wait is None else [wait]
            if last and wait is not None and bug == "race" and j == 0:
                waits = [(wait.counter, 1)]
            if last and wait is not None and bug == "deadlock" and j == 0:
                waits = [(wait.counter, wait.threshold + 1)]
            b.add_task(
                K.GEMV_TILE,
                [prev, w],
                [out],
                out_counter=c,
                waits=waits,
                sm=(n * width + j) % 8,
                params={"K": 16 * width, "N_tile": 16, "n_off": 16 * j},
                label=f"L{n}.{j}",
            )
        prev, wait = out, b.join(c)
    return b.build(meta={"example": f"layered {bug or 'valid'}"}, target=TARGETS["h100"])


def race_witness(n_tasks: int) -> tuple[MegakernelProgram, dict[str, Any]]:
    """layered(n, "race") and a legal witness: everything before the last layer runs, then the
    last writer of the layer before starts and the racing reader starts."""
    prog = layered(n_tasks, "race")
    ids = [t.id for t in prog.tasks]
    writer, reader = ids[-5], ids[-4]
    events = [{"event": e, "task": t} for t in ids[:-5] for e in ("start", "end")]
    events += [{"event": "start", "task": writer}, {"event": "start", "task": reader}]
    buf = prog.tasks[-4].inputs[0]
    w = {
        "kind": "read-race",
        "property": f"task {reader} reads buffer {buf} before writer {writer} has ended",
        "tasks": [reader, writer],
        "buffers": [buf],
        "counters": [],
        "roles": {"reader": reader, "writer": writer, "buffer": buf},
        "events": events,
        "blocked": [],
        "cycle": [],
    }
    return prog, w
