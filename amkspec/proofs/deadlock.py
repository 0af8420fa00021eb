"""Deadlock-freedom obligations (codes D2xx, spec §3.2).

Every wait can be satisfied, no task waits on itself, the producer→consumer
graph is acyclic, and the per-SM queues cannot block: with each SM running its
queue in task-list order, the dependency graph plus the *queue edges*
(consecutive tasks of one SM queue) must be acyclic. A cycle through queue edges
is a deadlock even when it crosses SMs (``a`` and ``b`` on SM 0 with ``b`` queued
first, ``a → x → b`` with ``x`` elsewhere: SM 0 blocks on ``b`` forever).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from operator import gt

from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex, find_cycle, is_int, kahn

_D, _E = Family.DEADLOCK, Severity.ERROR
NO_PRODUCER = register("D201", _D, _E, "a wait on a counter that no task increments")
THRESHOLD_TOO_HIGH = register("D202", _D, _E, "a wait threshold exceeds the counter's producer count")
SELF_WAIT = register("D203", _D, _E, "a task waits on its own out_counter")
CYCLE = register("D204", _D, _E, "the producer→consumer graph has a cycle")
SM_QUEUE = register(
    "D205", _D, _E, "the per-SM queues (task-list order) block: DAG plus queue edges has a cycle"
)


def check_waits(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Each wait is satisfiable: ``1 <= threshold <= #producers`` and not on the task's own counter.

    Spec §3.2. The waits are gone through one by one (:func:`unsatisfiable_waits`) only when
    :func:`may_be_unsatisfiable`: in most programs no wait can fail.
    """
    if may_be_unsatisfiable(ix):
        yield from unsatisfiable_waits(ix)


def may_be_unsatisfiable(ix: ProgramIndex) -> bool:
    """Whether some wait may fail :func:`unsatisfiable_waits`: a task waits on its own counter, or
    a counter some task waits on has no producer, or fewer producers than the highest threshold
    waited for on it (:attr:`ProgramIndex.max_threshold`). Else every wait is satisfiable."""
    producers, highest = ix.producers, ix.max_threshold
    return (
        bool(ix.self_waiting)
        or not highest.keys() <= producers.keys()
        or any(map(gt, highest.values(), map(len, map(producers.__getitem__, highest))))
    )


def unsatisfiable_waits(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """D201-D203 for each wait of each task, in task-list order (spec §3.2)."""
    counters, producers = ix.counters, ix.producers
    for pos, waits in enumerate(ix.waits):
        own = ix.out_counter[pos]
        for i, c, t in waits:
            if c not in counters:
                continue  # S105 reports it
            if c == own:
                yield diag(
                    SELF_WAIT,
                    f"task {ix.describe(pos)} waits[{i}] on counter {c}, its own out_counter",
                    tasks=[ix.task_id(pos)],
                    counters=[c],
                )
                continue
            makers = producers.get(c, ())
            if not makers:
                yield diag(
                    NO_PRODUCER,
                    f"task {ix.describe(pos)} waits on counter {c} but no task increments it",
                    tasks=[ix.task_id(pos)],
                    counters=[c],
                )
            elif type(t) is int and t > len(makers):
                yield diag(
                    THRESHOLD_TOO_HIGH,
                    f"task {ix.describe(pos)} waits on counter {c} with threshold {t} but counter {c} has "
                    f"only {len(makers)} producer(s) ({ix.describe_many(makers)})",
                    tasks=[ix.task_id(pos), *ix.task_ids(makers)],
                    counters=[c],
                )


def check_cycle(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """The dependency graph (without self-edges, reported as D203) has a topological order (spec §3.2)."""
    if ix.topo is not None:
        return
    cycle = find_cycle(ix.n, ix.succs) or []
    path = " -> ".join(ix.describe(p) for p in [*cycle, *cycle[:1]])
    yield diag(CYCLE, f"cycle: {path}", tasks=ix.task_ids(cycle), counters=_counters_on(ix, cycle))


def _counters_on(ix: ProgramIndex, cycle: list[int]) -> list[int]:
    return [c for c in (ix.out_counter[p] for p in cycle) if c is not None]


def sm_queues(ix: ProgramIndex) -> dict[int, list[int]]:
    """SM → positions of its tasks in task-list order (only valid, assigned ``sm`` values; spec §3.2)."""
    queues: dict[int, list[int]] = {}
    for pos, task in enumerate(ix.tasks):
        sm = getattr(task, "sm", None)
        if is_int(sm) and sm >= 0:
            queues.setdefault(sm, []).append(pos)
    return queues


def check_sm_queues(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Each SM's serial queue is compatible with the DAG: DAG ∪ queue edges is acyclic (spec §3.2)."""
    if not ix.acyclic or ix.forward:
        return  # forward edges: task-list order is topological for the DAG and every queue edge
    queues = sm_queues(ix)
    if not queues:
        return
    sm_of = {p: sm for sm, q in queues.items() for p in q}
    succs = [list(s) for s in ix.succs]
    preds = [list(p) for p in ix.preds]
    for q in queues.values():
        for a, b in itertools.pairwise(q):
            succs[a].append(b)
            preds[b].append(a)
    if kahn(ix.n, preds, succs) is not None:
        return
    direct = [
        (a, b)
        for b in range(ix.n)
        for a in ix.preds[b]
        if a > b and sm_of.get(a, -1) == sm_of.get(b) and b in sm_of
    ]
    for a, b in direct:
        yield diag(
            SM_QUEUE,
            f"task {ix.describe(b)} waits on task {ix.describe(a)} but is queued before it on SM {sm_of[b]} "
            f"(counter {ix.out_counter[a]}); SM {sm_of[b]} would block forever",
            tasks=ix.task_ids([b, a]),
            counters=[ix.out_counter[a]],
        )
    if direct:
        return
    cycle = find_cycle(ix.n, succs) or []
    steps = []
    for a, b in zip(cycle, [*cycle[1:], *cycle[:1]], strict=True):
        if b in ix.succs[a]:
            steps.append(f"{ix.describe(a)} signals {ix.describe(b)}")
        else:
            steps.append(f"{ix.describe(a)} precedes {ix.describe(b)} in SM {sm_of.get(a)}'s queue")
    yield diag(
        SM_QUEUE,
        "the SM queues block on a cycle of dependency and queue edges: " + "; ".join(steps),
        tasks=ix.task_ids(cycle),
    )
