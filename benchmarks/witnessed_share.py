"""Share of rejections that ``explain`` labels *witnessed* (a Z3 execution the ReferenceVM replay
reproduces) versus *rule-only*, on random rejected programs (issue 9, "report the share").

Run: ``python3 benchmarks/witnessed_share.py [--programs 300] [--seed 0]``. Programs are
:func:`amkspec.programs.strategies.valid_programs` (every opcode, sound shapes, so they run on the VM) with
one synchronisation mutation each (``tools/random_agreement.py``); only rejected ones count.
Prints witnessed / rule-only per code and overall, and the reasons given for rule-only findings.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from hypothesis import HealthCheck, Phase, given, settings
from random_agreement import mutate

from amkspec.ir import MegakernelProgram
from amkspec.programs.strategies import valid_programs
from amkspec.smt.explain import explain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=300)
    ap.add_argument("--max-tasks", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    by_code: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    rejected = 0
    start = time.perf_counter()

    @settings(max_examples=args.programs, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(valid_programs(max_tasks=args.max_tasks))
    def one(prog: MegakernelProgram) -> None:
        nonlocal rejected
        mutate(prog, rng)
        result = explain(prog)
        if result.verdict != "rejected":
            return
        rejected += 1
        for f in result.findings:
            by_code[f"{f.code} {f.status}"] += 1
            if f.status == "rule-only":
                reasons[f.reason.split(":")[0][:90]] += 1

    one()
    witnessed = sum(n for k, n in by_code.items() if k.endswith("witnessed"))
    total = sum(by_code.values())
    print(f"rejected programs: {rejected}; findings: {total}; witnessed: {witnessed} "
          f"({100 * witnessed / max(total, 1):.1f}%); rule-only: {total - witnessed}")
    for key, n in sorted(by_code.items()):
        print(f"  {key}: {n}")
    print("rule-only reasons:")
    for why, n in reasons.most_common():
        print(f"  {n:5d}  {why}")
    print(f"time: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
