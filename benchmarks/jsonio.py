"""Benchmark of the JSON format (spec §6): load and dump medians at 1k/10k/100k tasks.

Run: ``cd /work/main && python3 benchmarks/jsonio.py [--repeat N] [--sizes 1000,10000,100000]``.

Each program is :func:`amkspec.programs.families.gemv_chain`: GEMV tiles and residual adds (every
task has a wait, params and a label, so every record type is exercised). The comparison with the
original's reader is ``load.py``. Printed per size: the median seconds of
``amkspec.loads`` and ``amkspec.dumps``, and their ratio to the standard library alone on the
same text (``json.loads`` and ``json.dumps(indent=2)``), i.e. the price of typed records with
path-naming errors and of the canonical writer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import median_wall

from amkspec.ir import dumps, loads, to_dict
from amkspec.programs.families import gemv_chain


def measure(size: int, repeat: int) -> str:
    """One table row for a program of about ``size`` tasks."""
    prog = gemv_chain(size)
    text = dumps(prog)
    doc = to_dict(prog)
    load_s = median_wall(lambda: loads(text), repeat)
    json_load_s = median_wall(lambda: json.loads(text), repeat)
    dump_s = median_wall(lambda: dumps(prog), repeat)
    json_dump_s = median_wall(lambda: json.dumps(doc, indent=2), repeat)
    return (f"{len(prog.tasks):>8} {len(text) / 1e6:>6.1f} {load_s:>9.3f} {json_load_s:>13.3f} "
            f"{load_s / json_load_s:>6.2f} {dump_s:>9.3f} {json_dump_s:>13.3f} "
            f"{dump_s / json_dump_s:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    print(f"{'tasks':>8} {'MB':>6} {'loads s':>9} {'json.loads s':>13} {'ratio':>6} "
          f"{'dumps s':>9} {'json.dumps s':>13} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        print(measure(size, args.repeat))


if __name__ == "__main__":
    main()
