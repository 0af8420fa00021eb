"""Benchmark of the memory-safety family (``check_memory_safety``, M4xx): median time per program size
and its share of a full ``validate()`` on the same program.

Run: ``cd /work/main && python3 benchmarks/memory.py [--repeat N] [--sizes 1000,10000,100000]``.

The programs are :func:`amkspec.programs.families.mlp_layers`: per layer an RMSNORM, ``tiles`` GEMV
tiles of a gate and of an up projection under one counter each, a SILU_MUL, ``tiles`` GEMV tiles of
a down projection and a residual ADD, every shape sound (the check finds nothing and runs every rule
of each task).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.programs.families import mlp_layers
from amkspec.proofs import validate
from amkspec.proofs.memory import check_memory_safety


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--validate-up-to", type=int, default=20000,
                        help="also time validate() (for the share) on programs up to this many tasks")
    args = parser.parse_args()
    print(f"{'tasks':>8} {'memory s':>10} {'us/task':>8} {'validate s':>11} {'share':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        prog = mlp_layers(size)
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
