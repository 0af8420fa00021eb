"""Strategies of the VM tests: random counter DAGs and interleavings (hypothesis), and the oracle
:func:`sweep_order`; the small hand-written programs are :mod:`amkspec.programs.small`."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from amkspec.ir import (
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    Task,
    Wait,
)

K = InstructionKind


@st.composite
def nop_dags(draw: st.DrawFn, max_tasks: int = 12) -> MegakernelProgram:
    """A valid program of NOP tasks whose list order is unrelated to its dependency order.

    Tasks get ranks (a topological order); consecutive ranks are grouped onto shared
    counters; each task waits, with the all-join threshold, on some groups whose
    members all have lower ranks. The task list is a random permutation of the ranks.
    """
    n = draw(st.integers(1, max_tasks))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    groups = [list(range(a, b)) for a, b in itertools.pairwise(bounds)]
    group_of = {rank: g for g, members in enumerate(groups) for rank in members}
    order = draw(st.permutations(range(n)))
    tasks = []
    for pos, rank in enumerate(order):
        earlier = [g for g, members in enumerate(groups) if members[-1] < rank]
        waits = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        tasks.append(Task(pos, K.NOP, [], [], group_of[rank], [Wait(g, len(groups[g])) for g in waits],
                          label=f"r{rank}"))
    return MegakernelProgram(counters=[Counter(g) for g in range(len(groups))], tasks=tasks)


def sweep_order(program: MegakernelProgram) -> list[int]:
    """The original reference VM's order: sweep the list again and again, firing on the spot."""
    values = {c.id: c.init for c in program.counters}
    done: set[int] = set()
    order: list[int] = []
    while len(done) < len(program.tasks):
        progress = False
        for task in program.tasks:
            if task.id not in done and all(values[w.counter] >= w.threshold for w in task.waits):
                done.add(task.id)
                order.append(task.id)
                values[task.out_counter] += 1
                progress = True
        assert progress, "the program deadlocks"
    return order


@st.composite
def tiled_dags(draw: st.DrawFn, max_tasks: int = 8) -> tuple[MegakernelProgram, dict[str, Any]]:
    """A valid program with real numerics: the tasks of a counter group write column tiles of the
    group's buffer; a task multiplies the buffer of the first group it waits on (or the input) by
    its own weight. Returns the program and its weights."""
    import torch

    dag = draw(nop_dags(max_tasks))
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 3))
    n_groups = len(dag.counters)
    size = {g: sum(t.out_counter == g for t in dag.tasks) for g in range(n_groups)}
    outs = {g: b.new_buffer(f"g{g}", BufferKind.IO_OUTPUT, DType.F32, (1, 2 * size[g]))
            for g in range(n_groups)}
    for g in range(n_groups):
        b.new_counter(f"g{g}")
    weights: dict[str, Any] = {}
    seen: dict[int, int] = {}
    for task in dag.tasks:
        g = task.out_counter
        src = outs[task.waits[0].counter] if task.waits else x
        width = 3 if src == x else 2 * size[task.waits[0].counter]
        w = b.new_buffer(f"w{task.id}", BufferKind.WEIGHT, DType.F32, (2 * size[g], width))
        rng = torch.Generator().manual_seed(task.id)
        weights[f"w{task.id}"] = torch.randn(2 * size[g], width, generator=rng)
        tile = seen.get(g, 0)
        seen[g] = tile + 1
        b.add_task(K.GEMV_TILE, [src, w], [outs[g]], out_counter=g, waits=task.waits,
                   params={"K": width, "N_tile": 2, "n_off": 2 * tile}, label=task.label)
    return b.build(), weights


@st.composite
def interleavings(draw: st.DrawFn, program: MegakernelProgram) -> list[Any]:
    """A legal start/end trace of ``program`` in which running tasks overlap at random."""
    from amkspec.ir.trace import Event

    values = {c.id: 0 for c in program.counters}
    started: set[int] = set()
    running: list[int] = []
    events = []
    while len(started) < len(program.tasks) or running:
        ready = [t.id for t in program.tasks if t.id not in started
                 and all(values[w.counter] >= w.threshold for w in t.waits)]
        choices = [("start", t) for t in ready] + [("end", t) for t in running]
        kind, task = draw(st.sampled_from(choices))
        events.append(Event(kind, task))
        if kind == "start":
            started.add(task)
            running.append(task)
        else:
            running.remove(task)
            values[program.tasks[task].out_counter] += 1
    return events
