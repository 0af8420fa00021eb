"""ReferenceVM scheduler benchmark: per-task scheduling cost on large NOP programs.

Run: ``python3 benchmarks/vm_scheduler.py [--repeats N]``. Prints medians.

NOP tasks have no numerics, so a launch's time is almost all scheduling: this isolates the
event-driven ready queue (O(V + E)) from the opcodes. Shapes: a chain (one ready task at a
time) and a layered DAG (``width`` tasks per layer sharing one counter, each waiting for the
whole previous layer), at 10k and 100k tasks, under the list-order and seeded-random policies.
Validation (construction) time is printed separately.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amkspec.ir import MegakernelProgram
from amkspec.programs.families import nop_chain, nop_layers
from amkspec.vm import ListOrder, ReferenceVM, SeededRandom


def bench(name: str, program: MegakernelProgram, repeats: int) -> None:
    t0 = time.perf_counter()
    vm = ReferenceVM(program)
    build = time.perf_counter() - t0
    for policy in (ListOrder(), SeededRandom(0)):
        walls, sched = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            vm.run({}, {}, policy=policy)
            walls.append(time.perf_counter() - t0)
            assert vm.last_stats is not None
            sched.append(vm.last_stats.sched_s + vm.last_stats.compute_s)
        n = len(program.tasks)
        per_task = statistics.median(sched) / n * 1e6
        print(f"{name:>16} {policy.name:>6}  tasks {n:>7}  validate+plan {build:7.3f} s  "
              f"launch {statistics.median(walls):7.3f} s  loop {per_task:6.2f} µs/task")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for n in (10_000, 100_000):
        bench(f"chain {n}", nop_chain(n), args.repeats)
        bench(f"layered {n}", nop_layers(n), args.repeats)


if __name__ == "__main__":
    main()
