"""Paired comparison of ``amkspec.loads`` between two checkouts (issue 12: the bounded reader's cost).

Run: ``python3 benchmarks/jsonio_paired.py OTHER_CHECKOUT [--tasks N] [--rounds R]``.

On a shared, loaded machine single benchmark runs drift by 2x; this script alternates the two
checkouts (one subprocess each, ``R`` rounds) on the same program (the ``benchmarks/jsonio.py``
chain of ``N`` tasks) and prints each round's median ``loads`` seconds and the ratio to
``json.loads`` measured in the same process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_CHILD = """
import sys, time, statistics, json
root, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, root); sys.path.insert(0, root + "/benchmarks")
from jsonio import chain_program
from amkspec.ir import dumps, loads
text = dumps(chain_program(n))
ours, std = [], []
for _ in range(5):
    t = time.perf_counter(); loads(text); ours.append(time.perf_counter() - t)
    t = time.perf_counter(); json.loads(text); std.append(time.perf_counter() - t)
a, b = statistics.median(ours), statistics.median(std)
print(f"{root}: loads {a:.3f} s, json.loads {b:.3f} s, ratio {a / b:.2f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", help="another checkout of amkspec (e.g. a worktree of main)")
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    for _ in range(opts.rounds):
        for root in (Path(opts.other).resolve(), HERE):
            subprocess.run([sys.executable, "-c", _CHILD, str(root), str(opts.tasks)], check=True, cwd="/")


if __name__ == "__main__":
    main()
