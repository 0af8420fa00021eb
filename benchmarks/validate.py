"""Benchmark of ``amkspec.validate`` against the real original validator, in the same process.

Run: ``python3 benchmarks/validate.py [--baseline PATH] [--repeat N] [--scaling 1000,...] [--write-results]``.

Per program family (:mod:`amkspec.programs.families`: layered 8k and 100k, chain, wide, the original's lowered
toy models and its own fixtures) it prints the median process-CPU time of amkspec's ``validate()``
and of the original's, and the speed-up (original / amkspec). Where the original cannot give a
like-for-like number (it skips its race checks above 8,000 tasks; it crashes on some programs) the
reason is printed instead. Then a scaling table (tasks → time, peak traced memory) for amkspec
alone, and where the time of one ``validate()`` of the layered 8k program goes: building the
program index, the footprints of every task, and each check in the order ``validate`` runs them.
``--write-results`` also writes the tables as Markdown under ``benchmarks/results/``, where
the site's performance page includes them (so the published figures are this script's output).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from operator import attrgetter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import Baseline, Unavailable, add_baseline_argument, open_baseline, ratio
from inputs import fixtures, lowered
from tables import write_result
from timing import median_cpu, traced_peak_mib

from amkspec.ir import MegakernelProgram, dumps, loads
from amkspec.ir.gcpause import gc_paused
from amkspec.programs.families import decoder_layers, gemv_chain, wide
from amkspec.proofs import validate
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.validate import CHECKS

Times = dict[str, tuple[float, float | None]]
"""Program name → (amkspec seconds, original seconds or None), as :func:`compare` measured them."""


def compare(
    name: str, text: str, base: Baseline | None, repeat: int, rows: list[str], times: Times
) -> float | None:
    """Print one row (amkspec time, original time, speed-up), add it to ``rows`` as Markdown and to
    ``times``; return the speed-up if both ran."""
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
    times[name] = (ours, theirs)
    return None if theirs is None else theirs / ours


def scaling(sizes: list[int], repeat: int) -> list[str]:
    """Markdown rows: tasks, median seconds, tasks/s, peak traced MiB of one validate()."""
    rows = ["| tasks | validate() median s | tasks/s | peak memory MiB |", "|---:|---:|---:|---:|"]
    for n in sizes:
        prog = decoder_layers(n)
        seconds = median_cpu(lambda p=prog: validate(p), repeat if n <= 100_000 else 1)
        peak = traced_peak_mib(lambda p=prog: validate(p))
        n_tasks = len(prog.tasks)
        row = f"| {n_tasks:,} | {seconds:.3f} | {n_tasks / seconds:,.0f} | {peak:.1f} |"
        print(row)
        rows.append(row)
    return rows


def read_once(prog: MegakernelProgram) -> None:
    """Read every field of every task, wait and buffer once: the least work any validator that
    judges the records on each call must do (issue 13's floor)."""
    fields = attrgetter("op", "inputs", "outputs", "out_counter", "waits", "params", "sm")
    rows = list(map(fields, prog.tasks))
    [(w.counter, w.threshold) for row in rows for w in row[4]]
    [b for row in rows for b in row[1] + row[2]]
    [item for row in rows for item in row[5].items()]
    list(map(attrgetter("id", "kind", "dtype", "shape", "space"), prog.buffers))


def floor(programs: list[tuple[str, str]], times: Times, repeat: int) -> list[str]:
    """Markdown rows: the read-once floor of each program against the ``validate()`` times
    :func:`compare` measured (amkspec's, and the original's divided by 10: issue 13's budget)."""
    rows = [
        "| program | tasks | read every field once ms | validate() ms | original / 10 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, text in programs:
        prog = loads(text)
        ours, theirs = times[name]
        reading = median_cpu(lambda p=prog: read_once(p), repeat * (1 if len(prog.tasks) > 1000 else 20))
        budget = "-" if theirs is None else f"{theirs * 1e3 / 10:.3f}"
        row = f"| {name} | {len(prog.tasks):,} | {reading * 1e3:.3f} | {ours * 1e3:.3f} | {budget} |"
        print("  " + row)
        rows.append(row)
    return rows


def breakdown(prog: MegakernelProgram, repeat: int) -> list[str]:
    """Markdown rows: median milliseconds of each stage of one ``validate()`` (a fresh index per run,
    with its task columns; the footprints are computed up front so that no check is charged for them)."""
    stages: dict[str, list[float]] = {}
    for _ in range(max(1, repeat)):
        with gc_paused():
            start = time.process_time()
            ix = ProgramIndex(prog)
            ix.columns  # noqa: B018 - built on first use and shared by several checks: the index's cost
            lap = [("program index", time.process_time() - start)]
            start = time.process_time()
            for pos in range(ix.n):
                ix.regions(pos)
            lap.append(("footprints", time.process_time() - start))
            for name, check in CHECKS:
                start = time.process_time()
                list(check(ix))
                lap.append((name, time.process_time() - start))
        for name, seconds in lap:
            stages.setdefault(name, []).append(seconds)
    medians = {name: statistics.median(times) * 1e3 for name, times in stages.items()}
    total = sum(medians.values())
    rows = ["| stage | ms | share |", "|---|---:|---:|"]
    rows += [f"| {name} | {ms:.2f} | {ms / total:.0%} |" for name, ms in medians.items()]
    rows.append(f"| total | {total:.2f} | |")
    for row in rows[2:]:
        print("  " + row)
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
        ("layered 8k", dumps(decoder_layers(8000))), ("layered 100k", dumps(decoder_layers(100_000))),
        ("chain 8k", dumps(gemv_chain(8000))), ("wide 4k tiles", dumps(wide(4000))),
    ]
    rows = ["| program | tasks | amkspec ms | original ms | speed-up | note |",
            "|---|---:|---:|---:|---:|---|"]
    times: Times = {}
    for name, text in families:
        runs = args.repeat if "100k" not in name else max(1, args.repeat // 2)
        compare(name, text, base, runs, rows, times)
    programs = list(lowered())
    ratios = (compare(name, text, base, args.repeat, rows, times) for name, text in programs)
    lowered_ratios = [r for r in ratios if r]
    for name, text in fixtures():
        compare(name, text, base, args.repeat, rows, times)
    if lowered_ratios:
        median = statistics.median(lowered_ratios)
        line = f"median speed-up over the original's lowered programs: {median:.2f}x"
        print("  " + line)
        rows += ["", line[0].upper() + line[1:] + "."]
    print("scaling (layered programs, amkspec alone):")
    scaled = scaling([int(s) for s in args.scaling.split(",") if s], args.repeat)
    print(f"where the time goes (layered 8k, median of {args.repeat}):")
    stages = breakdown(decoder_layers(8000), args.repeat)
    print("the floor: reading every record field once, against one validate() and the 10x budget:")
    floors = floor([families[0], programs[0]], times, args.repeat)
    if args.write_results:
        write_result("validate_vs_original.md", rows)
        write_result("validate_scaling.md", scaled)
        write_result("validate_breakdown.md", stages)
        write_result("validate_floor.md", floors)


if __name__ == "__main__":
    main()
