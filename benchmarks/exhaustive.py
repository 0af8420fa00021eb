"""The bound the exhaustive check reaches in a time budget: the table the proofs guide includes.

Run: ``python3 benchmarks/exhaustive.py NAME [--tasks 4] [--buffers 2] [--counters 2] [--threshold 2]
[--init] [--sm] [--pages] [--minutes 10] [--executor ray] [--workers 2] [--write-results]``.
Runs :func:`amkspec.evidence.exhaustive.check.check` (what ``amkspec check-validator`` runs, without a
checkpoint) and prints its table and summary: per task count the programs, the symmetry classes and
how many were checked; the bound reached, the classes per second, the disagreements. The machine's
load average is printed with them. ``--write-results`` writes ``benchmarks/results/exhaustive_NAME.md``.
Exits 1 on a disagreement.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tables import write_result

from amkspec.evidence.exhaustive.check import check
from amkspec.evidence.exhaustive.domain import Bound, Domain
from amkspec.executors import make_executor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    for size, default in (("tasks", 4), ("buffers", 2), ("counters", 2), ("threshold", 2)):
        parser.add_argument(f"--{size}", type=int, default=default)
    for flag in ("init", "sm", "pages"):
        parser.add_argument(f"--{flag}", action="store_true")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--executor", default="ray")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    bound = Bound(args.tasks, args.buffers, args.counters, args.threshold, args.init, args.sm, args.pages)
    domain = Domain(bound)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    with make_executor(args.executor, args.workers) as pool:
        report = check(bound, executor=pool, minutes=args.minutes)
    after = "/".join(f"{x:.1f}" for x in os.getloadavg())
    flags = " ".join(f"--{f}" for f in ("init", "sm", "pages") if getattr(args, f))
    command = (f"python3 benchmarks/exhaustive.py {args.name} --tasks {args.tasks} --buffers {args.buffers} "
               f"--counters {args.counters} --threshold {args.threshold} {flags} --minutes {args.minutes:g} "
               f"--executor {args.executor} --workers {args.workers} --write-results").replace("  ", " ")
    head = (f"`{command}`: {len(domain.shapes)} task shapes, {len(domain.heads)} heads, "
            f"{len(domain.group)} symmetries; {os.cpu_count()} CPUs, load average (1/5/15 min) {load} before "
            f"and {after} after.")
    lines = [head, "", *report.table(), "", f"**Bound reached: {report.summary()}.**"]
    print("\n".join(lines))
    for d in report.disagreements:
        print(f"DISAGREEMENT ({d['tasks']} tasks): {d['reason']}\n{d['program']}")
    if args.write_results:
        write_result(f"exhaustive_{args.name}.md", lines)
    sys.exit(1 if report.disagreements else 0)


if __name__ == "__main__":
    main()
