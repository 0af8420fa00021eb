"""Running at scale: the same search and the same exhaustive check on 1 and 2 workers of each executor.

Run: ``python3 benchmarks/scale.py [--budget 40] [--models toy-2L medium] [--tasks 2] [--repeats 1]
[--write-results]``. For each executor (serial; ``local`` and ``ray`` with 1 and 2 workers):

- the schedule search ``MODEL --target h100 --budget N --seed 1`` of each model (toy-2L: about
  0.05 s a candidate; medium: about 0.5 s): wall seconds of ``search()`` (the
  executor's start-up, Ray's or the pool's, measured apart), trials per second, the workers kept
  busy (the trials' seconds added up, over the wall seconds) and whether its ``results.tsv``
  equals the serial run's byte for byte (it must: the check fails otherwise);
- the exhaustive check of every class of up to ``--tasks`` tasks of the main domain (2 data
  buffers, 2 counters, thresholds ≤ 2): wall seconds, classes per second, the speed-up over the same
  executor on 1 worker, the workers kept busy (the jobs' seconds added up, over the wall seconds:
  about the number of workers when the seam keeps each one fed, whatever the cores let them do),
  and whether the counts equal the serial run's (they must).

Medians of ``--repeats`` runs. Every process runs torch on one thread (``OMP_NUM_THREADS=1``, what
Ray gives its one-CPU workers) and at the same priority (Ray's workers run at niceness 15 unless
``RAY_worker_niceness`` says otherwise), so that the rows compare workers, not threads or
priorities. The
machine's load average is printed and written with the tables: on a shared machine, a second
worker only helps when a second core is free.
``--write-results`` writes ``benchmarks/results/scale_search.md`` and ``scale_exhaustive.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["OMP_NUM_THREADS"] = "1"  # before torch loads, here and in every worker
os.environ["RAY_worker_niceness"] = "0"  # noqa: SIM112 - Ray spells it so; workers run at niceness 15 otherwise

from tables import write_result

from amkspec.evidence.exhaustive.check import check
from amkspec.evidence.exhaustive.domain import Bound
from amkspec.executors import Executor, make_executor
from amkspec.search import search

SETUPS = [("serial", None), ("local", 1), ("local", 2), ("ray", 1), ("ray", 2)]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def warm(_: int) -> int:
    """A job that imports what the measured jobs import (torch among them): start-up, not work."""
    import amkspec.evidence.exhaustive.check
    import amkspec.search.jobs  # noqa: F401

    return os.getpid()


def _timed(name: str, workers: int | None, work: Callable[[Executor], Any], repeats: int
           ) -> tuple[float, float, Any]:
    """(median start-up seconds, median work seconds, the last result) on a fresh executor each time;
    start-up includes the workers' first imports."""
    starts, runs, result = [], [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        with make_executor(name, workers) as pool:
            list(pool.imap(warm, range(pool.workers)))
            t1 = time.perf_counter()
            result = work(pool)
            t2 = time.perf_counter()
        starts.append(t1 - t0)
        runs.append(t2 - t1)
    return statistics.median(starts), statistics.median(runs), result


def bench_search(models: list[str], budget: int, repeats: int) -> list[str]:
    rows = ["| model | executor | workers | start-up s | search s | trials/s | workers busy | "
            "results.tsv as serial |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for model in models:
        rows += _search_rows(model, budget, repeats)
    return rows


def _search_rows(model: str, budget: int, repeats: int) -> list[str]:
    rows, serial_rows = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, workers) in enumerate(SETUPS):
            def work(pool: Executor, k: int = k) -> tuple[str, float]:
                out = Path(tmp) / f"{k}-{time.monotonic_ns()}"
                result = search(model, "h100", budget, out, seed=1, executor=pool)
                return (out / "results.tsv").read_text(), sum(t.seconds for t in result.trials)

            start, run, (rows_text, trial_seconds) = _timed(name, workers, work, repeats)
            serial_rows = serial_rows or rows_text
            assert rows_text == serial_rows, f"{name} x{workers}: results.tsv differs from the serial run's"
            rows.append(f"| {model} | {name} | {workers or 1} | {start:.1f} | {run:.1f} | "
                        f"{budget / run:.1f} | {trial_seconds / run:.2f} | yes |")
            print(rows[-1], flush=True)
    return rows


def bench_exhaustive(tasks: int, repeats: int) -> list[str]:
    bound = Bound(tasks=tasks)
    rows = ["| executor | workers | start-up s | check s | classes/s | speed-up over 1 worker | "
            "workers busy | counts as serial |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    serial_counts, one_worker = None, {}
    for name, workers in SETUPS:
        start, run, report = _timed(name, workers, lambda pool: check(bound, executor=pool), repeats)
        counts = [(lv.tasks, lv.checked, lv.complete) for lv in report.levels]
        serial_counts = serial_counts or counts
        assert counts == serial_counts and not report.disagreements, f"{name} x{workers}: other counts"
        one_worker.setdefault(name, run)
        speedup = one_worker[name] / run
        rate = report.checked_now / run
        busy = report.job_seconds / run
        rows.append(f"| {name} | {workers or 1} | {start:.1f} | {run:.1f} | {rate:,.0f} | {speedup:.2f}× "
                    f"| {busy:.2f} | yes |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["toy-2L", "medium"])
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    before = _load()
    print(f"load average before: {before} on {os.cpu_count()} CPUs", flush=True)
    search_rows = bench_search(args.models, args.budget, args.repeats)
    exhaustive_rows = bench_exhaustive(args.tasks, args.repeats)
    after = _load()
    print(f"load average after: {after}", flush=True)
    note = (f"Load average (1/5/15 min) {before} before and {after} after, on {os.cpu_count()} CPUs; "
            f"medians of {args.repeats} run(s).")
    if args.write_results:
        cmd = (f"`python3 benchmarks/scale.py --models {' '.join(args.models)} --budget {args.budget} "
               f"--tasks {args.tasks} --repeats {args.repeats} --write-results`")
        write_result("scale_search.md", [
            f"`amkspec search MODEL --target h100 --budget {args.budget} --seed 1`, by {cmd}. {note}",
            "", *search_rows])
        write_result("scale_exhaustive.md", [
            f"Every class of up to {args.tasks} tasks of the main domain, by {cmd}. {note}", "",
            *exhaustive_rows])


if __name__ == "__main__":
    main()
