"""Benchmark of reading the JSON format (spec §6): amkspec ``loads`` against the original's reader.

Run: ``python3 benchmarks/load.py [--baseline PATH] [--repeat N] [--write-results]``.

For each program family (:mod:`amkspec.programs.families`, ``inputs.py``) it prints the median
process-CPU seconds (per call; a small program is timed in batches of calls) of
``amkspec.loads(text)`` and of the original's ``MegakernelProgram.from_json(text)`` on the same
text, and the speed-up (original / amkspec; ≥ 1 means amkspec reads at least as fast). amkspec's
reader also checks JSON paths, duplicate keys and size limits and keeps unknown fields, which the
original does not. ``--write-results`` writes the table to ``benchmarks/results/load_vs_original.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import Unavailable, add_baseline_argument, open_baseline, ratio
from inputs import fixtures, lowered
from tables import write_result
from timing import median_cpu

from amkspec.ir import dumps, loads
from amkspec.programs.families import decoder_layers, gemv_chain, wide

BATCH_CHARS = 2_000_000
"""Each timed sample reads at least this many characters (a batch of calls on a small program)."""


def _times(read: Callable[[str], object], text: str, calls: int) -> None:
    for _ in range(calls):
        read(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_baseline_argument(parser)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    base, banner = open_baseline(args.baseline)
    print(banner)
    print(f"  {'program':36s} {'MB':>6} {'amkspec ms':>10} {'orig. ms':>10} {'speed-up':>8}")
    texts = [("layered 8k", dumps(decoder_layers(8000))), ("layered 100k", dumps(decoder_layers(100_000))),
             ("chain 8k", dumps(gemv_chain(8000))), ("wide 4k tiles", dumps(wide(4000))),
             *lowered(), *fixtures()]
    ratios = []
    rows = ["| program | MB | amkspec ms | original ms | speed-up | note |", "|---|---:|---:|---:|---:|---|"]
    for name, text in texts:
        repeat = args.repeat if len(text) < 20_000_000 else max(1, args.repeat // 2)
        calls = max(1, BATCH_CHARS // len(text))  # small programs: time batches, not 0.2 ms calls
        ours = median_cpu(lambda t=text, n=calls: _times(loads, t, n), repeat) / calls
        theirs, note = None, ""
        if base is None:
            note = "original not available"
        else:
            try:
                base.program(text)
                theirs = median_cpu(lambda t=text, n=calls: _times(base.program, t, n), repeat) / calls
                ratios.append(theirs / ours)
            except Unavailable as exc:
                note = f"original {exc}"
        print(f"  {name:36s} {len(text) / 1e6:6.2f} {ours * 1e3:10.2f} "
              f"{'-' if theirs is None else f'{theirs * 1e3:10.2f}':>10} {ratio(ours, theirs):>8}  {note}")
        theirs_ms = "-" if theirs is None else f"{theirs * 1e3:.3f}"
        rows.append(f"| {name} | {len(text) / 1e6:.2f} | {ours * 1e3:.3f} | {theirs_ms} "
                    f"| {ratio(ours, theirs)} | {note} |")
    if ratios:
        line = f"median speed-up: {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x)"
        print("  " + line)
        rows += ["", line[0].upper() + line[1:] + "."]
    if args.write_results:
        write_result("load_vs_original.md", rows)


if __name__ == "__main__":
    main()
