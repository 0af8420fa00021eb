"""The benchmarks' timers and memory meters: medians, never single runs (these machines are
noisy); peak memory of one call, or of a whole child process."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any


def median_cpu(fn: Callable[[], object], repeat: int) -> float:
    """Median process-CPU seconds of ``repeat`` calls (single-threaded work: equals wall time on an
    idle machine, and is robust on a busy one)."""
    return _median(fn, repeat, time.process_time)


def median_wall(fn: Callable[[], object], repeat: int, *, warm_up: bool = False) -> float:
    """Median wall seconds of ``repeat`` calls, after one uncounted call when ``warm_up``."""
    if warm_up:
        fn()
    return _median(fn, repeat, time.perf_counter)


def _median(fn: Callable[[], object], repeat: int, clock: Callable[[], float]) -> float:
    times = []
    for _ in range(max(1, repeat)):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def traced_peak_mib(fn: Callable[[], object]) -> float:
    """The Python allocation peak (``tracemalloc``) of one call of ``fn``, in MiB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def peak_rss_mib() -> float:
    """This process's peak resident set so far, in MiB (native memory included: Z3's, torch's)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_child(script: str, args: list[str], timeout: float | None = None) -> dict[str, Any]:
    """Run ``script`` with ``args`` in a fresh interpreter (so its peak RSS is its own) and return the
    JSON object on the last line of its output; ``{"error": why}`` if it timed out or failed."""
    try:
        done = subprocess.run(
            [sys.executable, script, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr[-200:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
