"""Scaling of ``amkspec explain`` (issue 12 item 9): wall time and peak RSS at 1k/10k/100k tasks.

Run: ``python3 benchmarks/explain_pages.py [--sizes 1000,10000,100000] [--write-results]``.

Each (program, size) runs ``explain()`` in a fresh subprocess, which reports its own wall time
of ``explain()`` (building the program and importing torch for the ReferenceVM replay are not
timed) and its peak resident set size (``getrusage``: Z3's memory is native, so a Python-only
measure such as ``tracemalloc`` misses it; the RSS includes the interpreter, torch and z3, about
0.25 GB). The programs:

* ``pages``: a chain of COPY tasks ``a0 → a1 → …`` (each waits for the previous one), every
  ACTIVATION on one of four pages in turn, plus one clobber: the last task's output shares the
  first buffer's page while a late reader still reads that buffer, so ``validate`` rejects with
  R311 and ``explain`` runs the page queries;
* ``race``, ``deadlock``, ``accepted``: :func:`amkspec.programs.gallery.layered` (layers of four GEMV
  tiles, each layer joining the previous one) with a partial wait or a threshold above its
  producer count in the last layer, or valid (every query of the program is proved).

``--write-results`` writes the table to ``benchmarks/results/explain_scaling.md``, which the
robustness page includes. Before issue 12's fix every query encoded the whole ancestor chain:
``pages`` took 6.9 s at 1k tasks, 1.5 GB at 3k, and was killed at about 24 GB at 10k.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tables import write_result
from timing import peak_rss_mib, run_child

from amkspec.ir.model import MegakernelProgram

FAMILIES = ("pages", "race", "deadlock", "accepted")




def program(family: str, n: int) -> MegakernelProgram:
    from amkspec.programs.families import paged_copy_chain
    from amkspec.programs.gallery import layered

    return paged_copy_chain(n) if family == "pages" else layered(n, None if family == "accepted" else family)


def one(family: str, n: int) -> None:
    """The child: one explain() run, reported as a JSON line."""
    import amkspec.vm.witness  # noqa: F401  (torch: imported once per process, not timed)
    from amkspec.smt.explain import explain

    prog = program(family, n)
    t0 = time.perf_counter()
    result = explain(prog)
    seconds = time.perf_counter() - t0
    peak = peak_rss_mib()
    print(json.dumps({
        "family": family, "tasks": len(prog.tasks), "seconds": seconds, "rss_mib": peak,
        "verdict": result.verdict, "codes": sorted({f.code for f in result.findings if f.code}),
        "witnessed": result.witnessed,
    }))


def measure(family: str, n: int, timeout: float) -> dict[str, object]:
    return {"family": family, "tasks": n, **run_child(__file__, ["--one", family, str(n)], timeout)}


def row(r: dict[str, object]) -> str:
    if "error" in r:
        return f"| {r['family']} | {r['tasks']:,} | - | - | {r['error']} |"
    outcome = f"{r['verdict']} {', '.join(map(str, r['codes'])) or ''} witnessed {r['witnessed']}"
    return f"| {r['family']} | {r['tasks']:,} | {r['seconds']:.2f} | {r['rss_mib']:.0f} | {outcome} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("FAMILY", "TASKS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one[0], int(args.one[1]))
        return
    rows = ["| program | tasks | explain s | peak RSS MiB | outcome |", "|---|---:|---:|---:|---|"]
    print("\n".join(rows), flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        for family in args.families.split(","):
            rows.append(row(measure(family, n, args.timeout)))
            print(rows[-1], flush=True)
    if args.write_results:
        write_result("explain_scaling.md", rows)


if __name__ == "__main__":
    main()
