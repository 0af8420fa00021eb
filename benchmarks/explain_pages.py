"""Scaling of ``amkspec explain`` on programs with large page tables (issue 12 item 9): time and
peak Python memory at 1k/10k/100k tasks.

Run: ``python3 benchmarks/explain_pages.py [--sizes 1000,10000,100000]``. The program is a chain
of COPY tasks ``a0 → a1 → …`` (each waits for the previous one), every ACTIVATION on one of four
pages in turn, plus one clobber: the last task's output shares the first buffer's page while a
late reader still reads that buffer, so ``validate`` rejects with R311 and ``explain`` runs the
page query. The SMT view keeps only consecutive occupants of each page (linear in the page table);
before, every pair of occupants was an obligation (quadratic).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amkspec.ir import BufferKind, DType, InstructionKind, MemSpace, Page, PageAllocation, ProgramBuilder
from amkspec.ir.model import MegakernelProgram
from amkspec.smt.explain import explain


def chain(n: int) -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    acts = [b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, 4)) for i in range(n)]
    prev = b.add_task(InstructionKind.COPY, [x], [acts[0]], label="t0")
    for i in range(1, n - 1):
        prev = b.add_task(InstructionKind.COPY, [acts[i - 1]], [acts[i]], waits=[b.after(prev)],
                          label=f"t{i}")
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.ADD, [acts[n - 2], acts[0]], [out], waits=[b.after(prev)], label="late")
    b.add_task(InstructionKind.COPY, [x], [acts[n - 1]], label="clobber")
    pages = [Page(p, MemSpace.HBM, 16) for p in range(4)]
    mapping = {acts[i]: i % 4 for i in range(n - 1)}
    mapping[acts[n - 1]] = 0
    return b.build(pages=PageAllocation(mapping, pages))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        prog = chain(n)
        tracemalloc.start()
        t0 = time.perf_counter()
        result = explain(prog)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        codes = sorted({f.code for f in result.findings if f.code})
        print(f"explain {n:>7} tasks: {seconds:8.2f} s, peak {peak / 2**20:8.1f} MiB, "
              f"{result.verdict} {codes} witnessed={result.witnessed}")


if __name__ == "__main__":
    main()
