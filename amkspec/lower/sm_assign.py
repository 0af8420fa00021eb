"""Resolve ``ScheduleConfig.sm_assignment`` into ``Task.sm`` (spec §5, §3.2).

Each SM runs its tasks one at a time in task-list order, so an assignment is safe when every SM's
queue is a linear extension of the dependency DAG, cross-SM paths included. The lowering lists
tasks in a topological order, so *any* assignment has this property: for every path ``a ⇝ b``,
``a`` comes first in the list and hence first in its SM's queue. The policies therefore only
differ in balance:

- ``"round_robin"``: the i-th task of the list goes to SM ``i mod num_sms``.
- ``"load_balance"``: greedy list scheduling over the task list: each task goes to the SM where
  it would finish earliest, given its predecessors' predicted finish times and the SM's queue so
  far (costs from :mod:`amkspec.lower.cost`; ties go to the lowest SM).
- ``{task_id: sm}``: explicit; tasks it does not name keep the lowering's value.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from amkspec.ir import GpuTarget, MegakernelProgram
from amkspec.ir.graph import dependency_edges
from amkspec.ir.model import SmAssignment
from amkspec.lower.cost import task_us

POLICIES = ("round_robin", "load_balance")


def assign_sms(prog: MegakernelProgram, policy: SmAssignment) -> None:
    """Set ``Task.sm`` by ``policy``. Named policies need ``prog.target`` (else nothing changes).

    Raises ValueError for an unknown policy, a task id the program lacks, an SM out of range, or a
    task list that is not a topological order (then list-order SM queues could deadlock).
    """
    _require_topological_list(prog)
    target = prog.target
    if isinstance(policy, Mapping):
        _explicit(prog, policy, target)
    elif policy not in POLICIES:
        raise ValueError(f"unknown sm_assignment {policy!r} (use {', '.join(POLICIES)} or a map)")
    elif target is None:
        return
    elif policy == "round_robin":
        for i, task in enumerate(prog.tasks):
            task.sm = i % target.num_sms
    else:
        _load_balance(prog, target)


def _require_topological_list(prog: MegakernelProgram) -> None:
    position = {t.id: i for i, t in enumerate(prog.tasks)}
    for a, b in dependency_edges(prog):
        if a != b and position.get(a, -1) > position.get(b, -1):
            raise ValueError(f"task {a} must come before task {b} in the task list to assign SMs safely")


def _explicit(prog: MegakernelProgram, mapping: Mapping[int, int], target: GpuTarget | None) -> None:
    tasks = {t.id: t for t in prog.tasks}
    limit = target.num_sms if target is not None else None
    for tid, sm in mapping.items():
        if isinstance(sm, bool) or not isinstance(sm, int):
            raise ValueError(f"sm_assignment maps task {tid} to {sm!r}, not an SM number")
        if tid not in tasks:
            raise ValueError(f"sm_assignment names task {tid}, which the program does not have")
        if sm < 0 or (limit is not None and sm >= limit):
            raise ValueError(f"sm_assignment puts task {tid} on SM {sm}, outside [0, {limit})")
        tasks[tid].sm = sm


def _load_balance(prog: MegakernelProgram, target: GpuTarget) -> None:
    depth = prog.config.pipelining_depth if prog.config is not None else 2
    preds: dict[int, list[int]] = {t.id: [] for t in prog.tasks}
    for a, b in dependency_edges(prog):
        if a != b:
            preds[b].append(a)
    # The first minimum never lies past the first SM still unused, so no task goes beyond SM
    # len(tasks) - 1: the SMs past that are never looked at (a huge num_sms allocates nothing).
    free = np.zeros(min(target.num_sms, len(prog.tasks)))
    finish: dict[int, float] = {}
    for task in prog.tasks:
        ready = max((finish.get(p, 0.0) for p in preds[task.id]), default=0.0)
        start = np.maximum(free, ready)
        sm = int(np.argmin(start))  # the first minimum: ties go to the lowest SM
        finish[task.id] = free[sm] = float(start[sm]) + task_us(task, prog, target, depth)
        task.sm = sm
