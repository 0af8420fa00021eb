"""Graph indexing of a program: the producer→consumer DAG of spec §2.

Nodes are task ids. For every wait ``(c, t)`` of task ``b`` there is an edge
``a → b`` for every task ``a`` whose ``out_counter`` is ``c`` (self-edges kept).
These functions never judge a program; they index whatever it holds.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Hashable, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from amkspec.ir.model import MegakernelProgram, Task


def _hashable(value: object) -> bool:
    return isinstance(value, Hashable)


def producers_by_counter(prog: MegakernelProgram) -> dict[int, list[int]]:
    """Counter id → ids of the tasks that increment it, in task-list order (spec §2)."""
    out: dict[int, list[int]] = defaultdict(list)
    for task in prog.tasks:
        if _hashable(task.out_counter):
            out[task.out_counter].append(task.id)
    return dict(out)


def writers_by_buffer(prog: MegakernelProgram) -> dict[int, list[int]]:
    """Buffer id → ids of the tasks that list it as an output, in task-list order (spec §2)."""
    return _tasks_by_buffer(prog, attrgetter("outputs"))


def readers_by_buffer(prog: MegakernelProgram) -> dict[int, list[int]]:
    """Buffer id → ids of the tasks that list it as an input, in task-list order (spec §2)."""
    return _tasks_by_buffer(prog, attrgetter("inputs"))


def _tasks_by_buffer(prog: MegakernelProgram, refs: Callable[[Task], list[Any]]) -> dict[int, list[int]]:
    """Buffer id → ids of the tasks whose ``refs`` name it (once per task), in task-list order."""
    out: dict[int, list[int]] = defaultdict(list)
    for task in prog.tasks:
        for buf in dict.fromkeys(b for b in refs(task) if _hashable(b)):
            out[buf].append(task.id)
    return dict(out)


def dependency_edges(prog: MegakernelProgram) -> list[tuple[int, int]]:
    """Sorted, de-duplicated producer→consumer edges, self-edges kept (spec §2)."""
    producers = producers_by_counter(prog)
    edges: set[tuple[int, int]] = set()
    for task in prog.tasks:
        for wait in task.waits:
            if _hashable(wait.counter):
                edges.update((a, task.id) for a in producers.get(wait.counter, ()))
    return sorted(edges)


def successors(prog: MegakernelProgram) -> dict[int, list[int]]:
    """Task id → sorted successor ids over :func:`dependency_edges` (spec §2)."""
    succ: dict[int, list[int]] = {t.id: [] for t in prog.tasks}
    for a, b in dependency_edges(prog):
        succ.setdefault(a, []).append(b)
    return succ


def kahn_order(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[int] | None:
    """Kahn's algorithm as the reference runs it (spec §2): :func:`kahn_walk`, None on a cycle."""
    distinct = set(nodes)
    order = kahn_walk(distinct, edges)
    return order if len(order) == len(distinct) else None


def kahn_walk(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[int]:
    """The nodes in the order Kahn's algorithm takes them (spec §2); a node on or behind a cycle
    is never taken.

    A FIFO queue is seeded with the zero-indegree ids in ascending order and
    successors are visited in ascending id order.
    """
    node_list = sorted(set(nodes))
    indeg = dict.fromkeys(node_list, 0)
    succ: dict[int, list[int]] = {n: [] for n in node_list}
    for a, b in sorted(set(edges)):
        succ[a].append(b)
        indeg[b] += 1
    queue = deque(n for n in node_list if indeg[n] == 0)
    order: list[int] = []
    while queue:
        n = queue.popleft()
        order.append(n)
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                queue.append(m)
    return order


def topological_order(prog: MegakernelProgram) -> list[int] | None:
    """Task ids in a deterministic topological order, or None if the graph has a cycle (spec §2)."""
    return kahn_order((t.id for t in prog.tasks), dependency_edges(prog))
