"""Benchmark of ``amkspec.validate`` (issue 3 item 6): medians at 1k/10k/100k tasks and the
throughput ratio against a straightforward ancestor-set validator on the same 8000-task program.

Run: ``cd /work/main && python3 benchmarks/validate.py [--repeat N] [--sizes 1000,10000,100000]``.
Times are medians of process CPU time (see :func:`median_time`).

The programs are layered decoders: per layer an RMSNORM, ``tiles`` GEMV tiles of a gate
projection under one counter, a SILU_MUL, ``tiles`` GEMV tiles of a down projection and a
residual ADD that reads the previous residual *transitively* (it waits only on the down tiles),
so every layer needs real happens-before queries, not only direct edges. Tasks are assigned
round-robin to the target's SMs so the SM-queue obligation runs too.

The baseline mimics the reference implementation's algorithm (OPS_FACTS §12): per-task checks,
dependency edges, Kahn's order, then a per-task *set* of all transitive ancestors built over the
topological order, used for the read-after-write and write-after-write checks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amkspec.ir import (
    OP_REGISTRY,
    PARAM_FIELDS,
    READONLY_KINDS,
    TARGETS,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    Wait,
)
from amkspec.proofs import validate

K = InstructionKind
HIDDEN = 64


def layered_program(n_tasks: int, tiles: int = 8) -> MegakernelProgram:
    """A valid layered decoder of about ``n_tasks`` tasks (2·tiles + 3 tasks per layer)."""
    b = ProgramBuilder()
    f32 = DType.F32
    wide = HIDDEN * tiles // 4
    b.new_buffer("x", BufferKind.IO_INPUT, f32, (1, HIDDEN))
    table = b.new_buffer("table", BufferKind.WEIGHT, f32, (1, HIDDEN))
    idx = b.new_buffer("idx", BufferKind.IO_INPUT, DType.I32, (1,))
    h = b.new_buffer("h0", BufferKind.ACTIVATION, f32, (1, HIDDEN))
    b.add_task(K.EMBED, [idx, table], [h], params={"hidden": HIDDEN}, label="embed")
    h_wait = b.after(0)
    per_layer = 2 * tiles + 3
    layer = 0
    while len(b.tasks) + per_layer + 1 <= max(n_tasks, per_layer + 2):
        p = f"L{layer}."
        nw = b.new_buffer(p + "norm.w", BufferKind.WEIGHT, f32, (HIDDEN,))
        normed = b.new_buffer(p + "normed", BufferKind.ACTIVATION, f32, (1, HIDDEN))
        t = b.add_task(
            K.RMSNORM,
            [h, nw],
            [normed],
            waits=[h_wait],
            params={"eps": 1e-6, "hidden": HIDDEN},
            label=p + "norm",
        )
        gate = _tiled_projection(b, p + "gate", normed, HIDDEN, wide, tiles, b.after(t))
        act = b.new_buffer(p + "act", BufferKind.ACTIVATION, f32, (1, wide))
        gate_done = b.join(b.tasks[-1].out_counter)
        a = b.add_task(K.SILU_MUL, [gate, gate], [act], waits=[gate_done], label=p + "act")
        down = _tiled_projection(b, p + "down", act, wide, HIDDEN, tiles, b.after(a))
        h_next = b.new_buffer(f"h{layer + 1}", BufferKind.ACTIVATION, f32, (1, HIDDEN))
        down_done = b.join(b.tasks[-1].out_counter)
        r = b.add_task(K.ADD, [h, down], [h_next], waits=[down_done], label=p + "residual")
        h, h_wait, layer = h_next, b.after(r), layer + 1
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, f32, (1, HIDDEN))
    b.add_task(K.COPY, [h], [out], waits=[h_wait], label="out")
    target = TARGETS["h100"]
    for task in b.tasks:
        task.sm = task.id % target.num_sms
    return b.build(meta={"gpu": "h100"}, target=target)


def _tiled_projection(
    b: ProgramBuilder, name: str, x: int, k: int, n: int, tiles: int, wait: Wait
) -> int:
    """``tiles`` GEMV tiles of ``x @ W.T`` into a new ``[1, n]`` activation, sharing one counter."""
    w = b.new_buffer(name + ".w", BufferKind.WEIGHT, DType.F32, (n, k))
    out = b.new_buffer(name, BufferKind.ACTIVATION, DType.F32, (1, n))
    counter = b.new_counter(name)
    width = n // tiles
    for i in range(tiles):
        b.add_task(
            K.GEMV_TILE,
            [x, w],
            [out],
            out_counter=counter,
            waits=[wait],
            params={"K": k, "N_tile": width, "n_off": i * width},
            label=f"{name}[t{i}]",
        )
    return out


def baseline_validate(prog: MegakernelProgram) -> list[str]:
    """A straightforward validator in the reference implementation's style (ancestor sets)."""
    errors: list[str] = []
    buffers = {b.id: b for b in prog.buffers}
    counters = {c.id for c in prog.counters}
    for t in prog.tasks:
        for b in [*t.inputs, *t.outputs]:
            if b not in buffers:
                errors.append(f"task {t.id}: unknown buffer {b}")
        if t.out_counter not in counters:
            errors.append(f"task {t.id}: unknown counter")
        spec = OP_REGISTRY[t.op]
        if len(t.inputs) < spec.min_inputs or (spec.max_inputs >= 0 and len(t.inputs) > spec.max_inputs):
            errors.append(f"task {t.id}: arity")
        errors.extend(f"task {t.id}: missing {p}" for p in spec.required_params if p not in t.params)
        errors.extend(f"task {t.id}: unknown param {k}" for k in t.params if k not in PARAM_FIELDS)
    producers: dict[int, list[int]] = defaultdict(list)
    for t in prog.tasks:
        producers[t.out_counter].append(t.id)
    edges = sorted({(a, t.id) for t in prog.tasks for w in t.waits for a in producers[w.counter]})
    for t in prog.tasks:
        for w in t.waits:
            n = len(producers[w.counter])
            if n == 0 or w.threshold > n or (n > 1 and w.threshold != n):
                errors.append(f"task {t.id}: bad wait")
    preds: dict[int, list[int]] = defaultdict(list)
    succ: dict[int, list[int]] = defaultdict(list)
    indeg = {t.id: 0 for t in prog.tasks}
    for a, b in edges:
        preds[b].append(a)
        succ[a].append(b)
        indeg[b] += 1
    queue = deque(sorted(i for i, d in indeg.items() if d == 0))
    order = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                queue.append(s)
    if len(order) != len(prog.tasks):
        return [*errors, "cycle"]
    anc: dict[int, set[int]] = {}
    for v in order:
        s: set[int] = set()
        for p in preds[v]:
            s |= anc[p]
            s.add(p)
        anc[v] = s
    writers: dict[int, list[int]] = defaultdict(list)
    for t in prog.tasks:
        for b in t.outputs:
            writers[b].append(t.id)
    for t in prog.tasks:
        for b in t.inputs:
            if buffers[b].kind in READONLY_KINDS:
                continue
            errors.extend(f"race {w}->{t.id}" for w in writers[b] if w != t.id and w not in anc[t.id])
    for ws in writers.values():
        if len(ws) > 1 and len({prog.tasks[w].out_counter for w in ws}) > 1:
            errors.extend(f"waw {a},{c}" for a in ws for c in ws if a < c and a not in anc[c])
    return errors


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of ``fn``: CPU time is robust on a shared machine and equals
    wall time on an idle one, since validation is single-threaded; both are printed."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        prog = layered_program(n)
        result = validate(prog)
        assert result.ok, result.report()
        t, w = median_time(lambda p=prog: validate(p), args.repeat if n < 50000 else max(1, args.repeat // 2))
        print(
            f"validate  {len(prog.tasks):>7} tasks: median {t * 1e3:9.1f} ms CPU, {w * 1e3:9.1f} ms wall "
            f"({len(prog.tasks) / t:,.0f} tasks/s; {result.stats['reach_queries']} reach queries)"
        )
    prog = layered_program(8000)
    assert not baseline_validate(prog)
    ours, _ = median_time(lambda: validate(prog), args.repeat)
    base, _ = median_time(lambda: baseline_validate(prog), max(1, args.repeat // 2))
    print(
        f"8000-task program (CPU): amkspec {ours * 1e3:.1f} ms, ancestor-set baseline {base * 1e3:.1f} ms, "
        f"throughput ratio {base / ours:.1f}x"
    )


if __name__ == "__main__":
    main()
