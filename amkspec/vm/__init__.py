"""The ReferenceVM: counter-driven execution of validated programs with real numerics (spec §2).

::

    from amkspec.vm import ReferenceVM
    vm = ReferenceVM(program)                 # RefusedProgram if validate() rejects it
    out = vm.run(weights, inputs, kv=None)    # {buffer name: tensor} for IO_OUTPUT and KV_CACHE
    vm.last_stats.sched_s, vm.last_stats.compute_s
"""

from __future__ import annotations

from amkspec.vm.errors import (
    BindingError,
    DeadlockError,
    ExecutionError,
    RefusedProgram,
    StuckTask,
    TraceError,
)
from amkspec.vm.machine import ReferenceVM
from amkspec.vm.policies import ListOrder, Policy, Replay, SeededRandom
from amkspec.vm.replay import ReadRecord, ReplayReport, WriteConflict
from amkspec.vm.stats import RunStats
from amkspec.vm.witness import ReplayResult, replay_trace

__all__ = [
    "BindingError", "DeadlockError", "ExecutionError", "ListOrder", "Policy", "ReadRecord",
    "ReferenceVM", "RefusedProgram", "Replay", "ReplayReport", "ReplayResult", "RunStats",
    "SeededRandom", "StuckTask", "TraceError", "WriteConflict", "replay_trace",
]
