"""Per-SM queues of a program (spec §8.3: one block per SM queue).

A task with ``sm`` set stays on that SM; the others are placed one by one, in order G, on
the least loaded SM: an SM's load is the ``est_bytes`` of all its pinned tasks plus those of
the tasks placed on it so far (ties: fewer tasks, then the lower SM). Every queue lists its
tasks in one global order G: a topological order of the producer→consumer edges plus, for
each SM, the task-list order of its pinned tasks (the order spec §3 gives a queue). Ordering
every queue by one topological order G makes the launch deadlock-free: the blocked head with
the smallest G position would need a producer earlier in G, which is either done or the
head of another queue with a smaller position.
"""

from __future__ import annotations

import heapq

from amkspec.ir import MegakernelProgram
from amkspec.ir.graph import dependency_edges, kahn_order


class QueueError(ValueError):
    """The program's tasks cannot be queued (a cycle, or an ``sm`` outside the grid)."""


def global_order(program: MegakernelProgram, allow_cycles: bool = False) -> list[int]:
    """Task positions in the order G described in the module doc; with ``allow_cycles`` (a program
    forced past the validator) a cyclic program falls back to task-list order."""
    pos = {t.id: i for i, t in enumerate(program.tasks)}
    edges = [(pos[a], pos[b]) for a, b in dependency_edges(program) if a in pos and b in pos]
    last: dict[int, int] = {}
    for i, task in enumerate(program.tasks):
        if task.sm is not None:
            if task.sm in last:
                edges.append((last[task.sm], i))
            last[task.sm] = i
    order = kahn_order(range(len(program.tasks)), edges)
    if order is None and allow_cycles:
        return list(range(len(program.tasks)))
    if order is None:
        raise QueueError("the producer→consumer graph with the per-SM task order has a cycle")
    return order


def grid_size(program: MegakernelProgram, max_blocks: int | None = None) -> int:
    """Blocks to launch: the target's SM count (else ``max_blocks``, else 1) capped at ``max_blocks``,
    never fewer than the highest pinned SM needs."""
    pinned = max((t.sm + 1 for t in program.tasks if t.sm is not None), default=1)
    target = program.target.num_sms if program.target is not None else 0
    wanted = target or max_blocks or 1
    if max_blocks is not None:
        wanted = min(wanted, max_blocks)
    return max(wanted, pinned)


def build_queues(program: MegakernelProgram, num_sms: int, allow_cycles: bool = False) -> list[list[int]]:
    """``num_sms`` lists of task positions, each in global order G (see :func:`global_order`)."""
    for task in program.tasks:
        if task.sm is not None and not 0 <= task.sm < num_sms:
            raise QueueError(f"task {task.describe()} is pinned to sm {task.sm}, outside a grid of {num_sms}")
    load, count = [0] * num_sms, [0] * num_sms
    for task in program.tasks:
        if task.sm is not None:
            load[task.sm] += max(task.est_bytes, 0)
            count[task.sm] += 1
    heap = [(load[sm], count[sm], sm) for sm in range(num_sms)]
    heapq.heapify(heap)
    queues: list[list[int]] = [[] for _ in range(num_sms)]
    for i in global_order(program, allow_cycles):
        task = program.tasks[i]
        if task.sm is not None:
            queues[task.sm].append(i)
            continue
        least, n, sm = heapq.heappop(heap)
        queues[sm].append(i)
        heapq.heappush(heap, (least + max(task.est_bytes, 0), n + 1, sm))
    return queues
