"""The benchmarks' timers: medians, never single runs (these machines are noisy)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


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
