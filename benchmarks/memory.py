"""Benchmark of the memory-safety family (``check_memory_safety``, M4xx): median time per program size
and its share of a full ``validate()`` on the same program.

Run: ``cd /work/main && python3 benchmarks/memory.py [--repeat N] [--sizes 1000,10000,100000]``.

The programs are layered MLP blocks: per layer an RMSNORM, ``tiles`` GEMV tiles of a gate and of an
up projection under one counter each, a SILU_MUL, ``tiles`` GEMV tiles of a down projection and a
residual ADD, every shape sound (the check finds nothing and runs every rule of each task).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait
from amkspec.proofs import validate
from amkspec.proofs.memory import check_memory_safety

HIDDEN, INTER = 64, 256


def layered_program(n_tasks: int, tiles: int = 4) -> MegakernelProgram:
    """Layers of RMSNORM, gate/up/down GEMV tiles, SILU_MUL and a residual ADD (~``n_tasks`` tasks)."""
    b = ProgramBuilder()
    op, act, wt = InstructionKind, BufferKind.ACTIVATION, BufferKind.WEIGHT
    resid = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, HIDDEN))
    ready: list[Wait] = []
    layer = 0
    while len(b.tasks) < n_tasks:
        norm_w = b.new_buffer(f"L{layer}.norm", wt, DType.F32, (HIDDEN,))
        normed = b.new_buffer(f"L{layer}.n", act, DType.F32, (1, HIDDEN))
        norm = b.add_task(op.RMSNORM, [resid, norm_w], [normed], waits=ready,
                          params={"eps": 1e-6, "hidden": HIDDEN})
        after_norm = [Wait(b.tasks[norm].out_counter, 1)]
        halves = []
        for name in ("gate", "up"):
            w = b.new_buffer(f"L{layer}.{name}.w", wt, DType.F32, (INTER, HIDDEN))
            out = b.new_buffer(f"L{layer}.{name}", act, DType.F32, (1, INTER))
            c = b.new_counter(name)
            for t in range(tiles):
                width = INTER // tiles
                b.add_task(op.GEMV_TILE, [normed, w], [out], out_counter=c, waits=after_norm,
                           params={"K": HIDDEN, "N_tile": width, "n_off": t * width})
            halves.append((out, Wait(c, tiles)))
        mixed = b.new_buffer(f"L{layer}.act", act, DType.F32, (1, INTER))
        swiglu = b.add_task(op.SILU_MUL, [halves[0][0], halves[1][0]], [mixed], waits=[w for _, w in halves])
        after_swiglu = [Wait(b.tasks[swiglu].out_counter, 1)]
        down_w = b.new_buffer(f"L{layer}.down.w", wt, DType.F32, (HIDDEN, INTER))
        down = b.new_buffer(f"L{layer}.d", act, DType.F32, (1, HIDDEN))
        c = b.new_counter("down")
        for t in range(tiles):
            width = HIDDEN // tiles
            b.add_task(op.GEMV_TILE, [mixed, down_w], [down], out_counter=c, waits=after_swiglu,
                       params={"K": INTER, "N_tile": width, "n_off": t * width})
        kind = BufferKind.IO_OUTPUT if len(b.tasks) + 1 >= n_tasks else act
        summed = b.new_buffer(f"L{layer}.h", kind, DType.F32, (1, HIDDEN))
        add = b.add_task(op.ADD, [resid, down], [summed], waits=[*ready, Wait(c, tiles)])
        resid, ready, layer = summed, [Wait(b.tasks[add].out_counter, 1)], layer + 1
    return b.build(meta={"model": "benchmarks/memory.py"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--validate-up-to", type=int, default=20000,
                        help="also time validate() (for the share) on programs up to this many tasks")
    args = parser.parse_args()
    print(f"{'tasks':>8} {'memory s':>10} {'us/task':>8} {'validate s':>11} {'share':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        prog = layered_program(size)
        found = check_memory_safety(prog)
        assert not found, found[:3]
        mem = median_wall(lambda p=prog: check_memory_safety(p), args.repeat)
        n = len(prog.tasks)
        if n > args.validate_up_to:
            print(f"{n:>8} {mem:>10.3f} {mem / n * 1e6:>8.2f} {'-':>11} {'-':>6}")
            continue
        full = median_wall(lambda p=prog: validate(p), max(1, args.repeat // 2))
        print(f"{n:>8} {mem:>10.3f} {mem / n * 1e6:>8.2f} {full:>11.3f} {mem / full:>6.0%}")


if __name__ == "__main__":
    main()
