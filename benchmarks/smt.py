"""Benchmark of the SMT layer (issue 4 item 8): time to a witness and to a full per-program proof.

Run: ``cd /work/main && python3 benchmarks/smt.py [--repeat N] [--sizes 50,200,1000] [--crosscheck N]``.

Programs are :func:`amkspec.programs.gallery.layered`: layers of four GEMV tiles under one
counter, each layer joining the previous one, SMs assigned round-robin. A defect is put in the
*last* layer, so a witness needs the whole chain of ancestors:

* ``race witness``: ``explain()`` on a program whose last layer has a partial wait (validate,
  then the read-race query of the rejected reader, then the replay check);
* ``deadlock witness``: the same with a threshold above the producer count;
* ``full proof``: every query of the valid program (cycle, deadlock, one read-race query per
  reader, one per overlapping writer pair), each UNSAT.

Target (DESIGN.md): a race or deadlock witness on a 1k-task program in at most 10 s.
``--crosscheck N`` also runs the three-oracle cross-check on N derandomized random programs
and reports how many rejections were witnessed and how many rule-only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amkspec.programs.gallery import layered
from amkspec.smt import Prover
from amkspec.smt.explain import explain

TARGET_S = 10.0


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall-clock and processor seconds (z3 runs in this process, so CPU time is robust
    to a busy machine)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def show(t: tuple[float, float]) -> str:
    return f"{t[0]:.3f}s ({t[1]:.3f})"


def witness(bug: str, n: int) -> Callable[[], object]:
    prog = layered(n, bug)

    def run() -> object:
        result = explain(prog)
        assert result.witnessed >= 1, result
        return result

    return run


def proof(n: int) -> Callable[[], object]:
    prog = layered(n)

    def run() -> object:
        results = Prover(prog).prove_all()
        assert all(r.proved for r in results)
        return results

    return run


def crosscheck(count: int) -> None:
    import functools
    from collections import Counter

    from hypothesis import HealthCheck, given, settings

    from amkspec.programs.strategies import mutated_valid_programs, sync_programs
    from amkspec.smt.crosscheck import crosscheck as oracles

    tally: Counter[str] = Counter()
    by_code: Counter[str] = Counter()
    check = functools.partial(oracles, tally=tally, by_code=by_code)

    opts = settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )

    @opts
    @given(sync_programs(max_tasks=8))
    def random_programs(prog) -> None:  # type: ignore[no-untyped-def]
        check(prog)

    @opts
    @given(mutated_valid_programs(max_tasks=10))
    def mutations(m) -> None:  # type: ignore[no-untyped-def]
        check(m[1])

    t0 = time.perf_counter()
    random_programs()
    mutations()
    print(f"cross-check of {2 * count} programs in {time.perf_counter() - t0:.1f} s: {dict(tally)}")
    print("findings by code and status:", ", ".join(f"{k}: {v}" for k, v in sorted(by_code.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="50,200,1000")
    ap.add_argument("--crosscheck", type=int, default=0)
    args = ap.parse_args()
    print("wall seconds (cpu seconds), medians")
    print(
        f"{'tasks':>6} {'race witness':>18} {'deadlock witness':>18} {'full proof':>18} {'queries':>8} "
        f"{'witness / target':>17}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        race = median_time(witness("race", n), args.repeat)
        dead = median_time(witness("deadlock", n), args.repeat)
        full = median_time(proof(n), args.repeat)
        queries = len(proof(n)())  # type: ignore[arg-type]
        ratio = max(race[0], dead[0]) / TARGET_S
        print(f"{n:>6} {show(race):>18} {show(dead):>18} {show(full):>18} {queries:>8} {ratio:>16.3f}x")
    if args.crosscheck:
        crosscheck(args.crosscheck)


if __name__ == "__main__":
    main()
