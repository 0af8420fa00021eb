"""Benchmark of certificates: time and peak memory of ``certify`` and of the independent checker
(``check_certificate``) at 1k/10k/100k tasks, on a chain and on layered MLP blocks (issue 12 item 9).

Run: ``python3 benchmarks/certificate.py [--sizes 1000,10000,100000] [--repeat N] [--write-results]``.

* chain: ADD tasks, each reading the two previous outputs but waiting only on the previous
  task, so every second read needs a two-hop happens-before path;
* layered: RMSNORM, gate/up/down GEMV tiles, SILU_MUL and a residual ADD per layer
  (``benchmarks/memory.py``); the residual read needs a path across the layer.

Each (program, size, step) runs in a fresh subprocess, which reports the median wall time of
``--repeat`` runs (one at 100k tasks and above), the ``tracemalloc`` peak of one run (Python
allocations) and its own peak resident set size (``getrusage``: the whole process, including the
interpreter and the program itself, taken before the ``tracemalloc`` run, whose bookkeeping would
inflate it). The checker's process reads the certificate the certifier's
process wrote, as ``amkspec check-cert`` does. ``--write-results`` writes the table to
``benchmarks/results/certificate_scaling.md``, which the robustness page includes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tables import write_result
from timing import median_wall, peak_rss_mib, run_child, traced_peak_mib

from amkspec.evidence.certificate import certify
from amkspec.evidence.certificate_check import check_certificate
from amkspec.ir import MegakernelProgram
from amkspec.programs.families import add_chain, mlp_layers

SHAPES: dict[str, Callable[[int], MegakernelProgram]] = {"chain": add_chain, "layered": mlp_layers}


def one(step: str, shape: str, size: int, cert_path: Path, repeat: int) -> None:
    """The child: time and memory of one step, as a JSON line."""
    prog = SHAPES[shape](size)
    if step == "certify":
        fn: Callable[[], object] = lambda: certify(prog)
    else:
        cert = json.loads(cert_path.read_text())
        fn = lambda: check_certificate(prog, cert)
    seconds = median_wall(fn, repeat if size < 100_000 else 1)
    rss = peak_rss_mib()  # before tracemalloc's own bookkeeping
    traced = traced_peak_mib(fn)
    if step == "certify":
        cert_path.write_text(json.dumps(certify(prog)))
    print(json.dumps({"tasks": len(prog.tasks), "seconds": seconds, "traced_mib": traced, "rss_mib": rss}))


def measure(step: str, shape: str, size: int, cert_path: Path, repeat: int) -> dict[str, Any]:
    result = run_child(__file__, ["--one", step, shape, str(size), str(cert_path), "--repeat", str(repeat)])
    if "error" in result:
        raise SystemExit(f"{step} of {shape} {size}: {result['error']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--one", nargs=4, metavar=("STEP", "SHAPE", "TASKS", "CERT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        step, shape, size, path = args.one
        one(step, shape, int(size), Path(path), args.repeat)
        return
    rows = [
        "| program | tasks | certify s | traced MiB | peak RSS MiB "
        "| check-cert s | traced MiB | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(rows), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            for shape in SHAPES:
                path = Path(tmp) / f"{shape}-{size}.json"
                made = measure("certify", shape, size, path, args.repeat)
                checked = measure("check", shape, size, path, args.repeat)
                cells = [f"{r['seconds']:.2f} | {r['traced_mib']:.0f} | {r['rss_mib']:.0f}"
                         for r in (made, checked)]
                rows.append(f"| {shape} | {int(made['tasks']):,} | " + " | ".join(cells) + " |")
                print(rows[-1], flush=True)
    if args.write_results:
        write_result("certificate_scaling.md", rows)


if __name__ == "__main__":
    main()
