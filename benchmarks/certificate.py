"""Benchmark of certificates: time and peak memory of ``certify`` and of the independent checker
(``check_certificate``) at 1k/10k/100k tasks, on a chain and on layered MLP blocks (issue 12 item 9).

Run: ``python3 benchmarks/certificate.py [--sizes 1000,10000,100000] [--repeat N]``.

* chain: ADD tasks, each reading the two previous outputs but waiting only on the previous
  task, so every second read needs a two-hop happens-before path;
* layered: RMSNORM, gate/up/down GEMV tiles, SILU_MUL and a residual ADD per layer
  (``benchmarks/memory.py``); the residual read needs a path across the layer.

Time is the median wall time of ``--repeat`` runs; peak memory is the ``tracemalloc`` peak of
one more run (Python allocations, which dominate).
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.ir import TARGETS, BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.proofs.cert_check import check_certificate
from amkspec.proofs.certificate import certify
from benchmarks.memory import layered_program

WIDTH = 16


def chain_program(n_tasks: int) -> MegakernelProgram:
    """``h[i] = h[i-1] + h[i-2]``; task ``i`` waits on task ``i-1`` only."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, WIDTH))
    hs = [x, x]
    waits: list = []
    for i in range(n_tasks - 1):
        h = b.new_buffer(f"h{i}", BufferKind.ACTIVATION, DType.F32, (1, WIDTH))
        t = b.add_task(InstructionKind.ADD, [hs[-1], hs[-2]], [h], waits=waits, label=f"add{i}")
        hs, waits = [hs[-1], h], [b.after(t)]
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, WIDTH))
    b.add_task(InstructionKind.COPY, [hs[-1]], [out], waits=waits, label="out")
    return b.build(meta={"model": "benchmarks.certificate"}, target=TARGETS["h100"])


def peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shapes = {"chain": chain_program, "layered": layered_program}
    print(f"{'program':>8} {'tasks':>7} {'paths':>7}  {'certify s':>9} {'MiB':>7}  {'check s':>8} {'MiB':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        for name, make in shapes.items():
            prog = make(size)
            cert = certify(prog)
            t_make = median_wall(lambda prog=prog: certify(prog), args.repeat)
            m_make = peak_mib(lambda prog=prog: certify(prog))
            t_check = median_wall(lambda prog=prog, cert=cert: check_certificate(prog, cert), args.repeat)
            m_check = peak_mib(lambda prog=prog, cert=cert: check_certificate(prog, cert))
            print(
                f"{name:>8} {len(prog.tasks):>7} {len(cert['paths']):>7}  {t_make:9.3f} {m_make:7.1f}  "
                f"{t_check:8.3f} {m_check:7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
