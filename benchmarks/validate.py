"""Benchmark of ``amkspec.validate`` against the real original validator, in the same process.

Run: ``python3 benchmarks/validate.py [--baseline PATH] [--repeat N] [--scaling 1000,...] [--write-docs]``.

Per program family (see ``programs.py``: layered 8k and 100k, chain, wide, the original's lowered
toy models and its own fixtures) it prints the median process-CPU time of amkspec's ``validate()``
and of the original's, and the speed-up (original / amkspec). Where the original cannot give a
like-for-like number (it skips its race checks above 8,000 tasks; it crashes on some programs) the
reason is printed instead. Then a scaling table (tasks → time, peak traced memory) for amkspec
alone. ``--write-results`` also writes both tables as Markdown under ``benchmarks/results/``, where
the site's performance page includes them (so the published figures are this script's output).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import Baseline, Unavailable, add_baseline_argument, open_baseline, ratio
from programs import chain, fixtures, layered, lowered, wide
from tables import write_result
from timing import median_cpu, traced_peak_mib

from amkspec.ir import dumps, loads
from amkspec.proofs import validate


def compare(name: str, text: str, base: Baseline | None, repeat: int, rows: list[str]) -> float | None:
    """Print one row (amkspec time, original time, speed-up) and add it to ``rows`` as Markdown;
    return the speed-up if both ran."""
    prog = loads(text)
    result = validate(prog)
    assert result.ok, f"{name}: {result.report()}"
    ours = median_cpu(lambda: validate(prog), repeat)
    theirs: float | None = None
    note = ""
    if base is None:
        note = "original not available"
    else:
        try:
            run = base.validator(text)
            theirs = median_cpu(run, repeat)
        except Unavailable as exc:
            note = f"original {exc}"
    theirs_ms = "-" if theirs is None else f"{theirs * 1e3:.2f}"
    speedup = ratio(ours, theirs)
    print(f"  {name:36s} {len(prog.tasks):>7} {ours * 1e3:10.2f} {theirs_ms:>10} {speedup:>8}  {note}")
    rows.append(f"| {name} | {len(prog.tasks):,} | {ours * 1e3:.2f} | {theirs_ms} | {speedup} | {note} |")
    return None if theirs is None else theirs / ours


def scaling(sizes: list[int], repeat: int) -> list[str]:
    """Markdown rows: tasks, median seconds, tasks/s, peak traced MiB of one validate()."""
    rows = ["| tasks | validate() median s | tasks/s | peak memory MiB |", "|---:|---:|---:|---:|"]
    for n in sizes:
        prog = layered(n)
        seconds = median_cpu(lambda p=prog: validate(p), repeat if n <= 100_000 else 1)
        peak = traced_peak_mib(lambda p=prog: validate(p))
        n_tasks = len(prog.tasks)
        row = f"| {n_tasks:,} | {seconds:.3f} | {n_tasks / seconds:,.0f} | {peak:.1f} |"
        print(row)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_baseline_argument(parser)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scaling", default="1000,10000,100000,1000000")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    base, banner = open_baseline(args.baseline)
    print(banner)
    print(f"  {'program':36s} {'tasks':>7} {'amkspec ms':>10} {'orig. ms':>10} {'speed-up':>8}")
    families = [
        ("layered 8k", dumps(layered(8000))), ("layered 100k", dumps(layered(100_000))),
        ("chain 8k", dumps(chain(8000))), ("wide 4k tiles", dumps(wide(4000))),
    ]
    rows = ["| program | tasks | amkspec ms | original ms | speed-up | note |",
            "|---|---:|---:|---:|---:|---|"]
    for name, text in families:
        compare(name, text, base, args.repeat if "100k" not in name else max(1, args.repeat // 2), rows)
    lowered_ratios = [r for name, text in lowered() if (r := compare(name, text, base, args.repeat, rows))]
    for name, text in fixtures():
        compare(name, text, base, args.repeat, rows)
    if lowered_ratios:
        median = statistics.median(lowered_ratios)
        line = f"median speed-up over the original's lowered programs: {median:.2f}x"
        print("  " + line)
        rows += ["", line[0].upper() + line[1:] + "."]
    print("scaling (layered programs, amkspec alone):")
    scaled = scaling([int(s) for s in args.scaling.split(",") if s], args.repeat)
    if args.write_results:
        write_result("validate_vs_original.md", rows)
        write_result("validate_scaling.md", scaled)


if __name__ == "__main__":
    main()
