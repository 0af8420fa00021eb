"""Programs for the VM tests: random counter DAGs (hypothesis) and small hand-written ones."""

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
    MemSpace,
    Page,
    PageAllocation,
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


def chain(scale_waits: bool = True, **params: Any) -> MegakernelProgram:
    """``y = 2·x`` then ``z = 3·y``; without ``scale_waits`` the second task does not wait (a race)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    first = b.add_task(K.MUL, [x], [y], params={"scale": 2.0}, label="double")
    b.add_task(K.MUL, [y], [z], waits=[b.after(first)] if scale_waits else [], params={"scale": 3.0},
               label="triple")
    return b.build()


def two_tiles() -> MegakernelProgram:
    """Two GEMV tiles writing disjoint halves of one output under one shared counter."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 3))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (4, 3))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("y (2 tiles)")
    for i in range(2):
        b.add_task(K.GEMV_TILE, [x, w], [y], out_counter=c, params={"K": 3, "N_tile": 2, "n_off": 2 * i},
                   label=f"y[t{i}]")
    return b.build()


def kv_program(pos: int = 0) -> MegakernelProgram:
    """Append ``x`` to a KV cache at ``pos`` and copy the whole cache to an output."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 1, 2))
    kc = b.new_buffer("kc", BufferKind.KV_CACHE, DType.F32, (4, 1, 2))
    out = b.new_buffer("snapshot", BufferKind.IO_OUTPUT, DType.F32, (4, 1, 2))
    append = b.add_task(K.KV_APPEND, [x, kc], [kc], params={"pos": pos}, label="append")
    b.add_task(K.COPY, [kc], [out], waits=[b.after(append)], label="snapshot")
    return b.build()


def paged_pair(reuse_after_read: bool = True) -> MegakernelProgram:
    """``a = 2·x`` and ``b = 3·a`` share no page; ``c = a + x`` lives on ``a``'s page.

    With ``reuse_after_read`` the write of ``c`` waits for ``b`` (the last reader of ``a``), so
    the reuse is safe; without it the write of ``c`` may clobber ``a`` before ``b`` reads it.
    """
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    a = b.new_buffer("a", BufferKind.ACTIVATION, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_buffer("c", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    t0 = b.add_task(K.MUL, [x], [a], params={"scale": 2.0}, label="a")
    t1 = b.add_task(K.MUL, [a], [y], waits=[b.after(t0)], params={"scale": 3.0}, label="y")
    t2 = b.add_task(K.MUL, [x], [c], waits=[b.after(t1)] if reuse_after_read else [],
                    params={"scale": 5.0}, label="c")
    b.add_task(K.COPY, [c], [z], waits=[b.after(t2)], label="z")
    pages = PageAllocation({a: 0, c: 0}, [Page(0, MemSpace.HBM, 16, 0, 3)])
    return b.build(pages=pages)


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


def add_weight() -> MegakernelProgram:
    """``y = x + w``: one input, one weight named ``w`` (which a VM may keep bound between launches)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(K.ADD, [x, w], [y], label="add")
    return b.build()


def embed_append(pos: int = 1) -> MegakernelProgram:
    """Row ``ids[0]`` of the weight ``tab`` (5 × 2) appended to the KV cache ``kc`` at ``pos``: an id
    outside the table fails the launch after it has started (a data error no validator sees)."""
    b = ProgramBuilder()
    ids = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,))
    tab = b.new_buffer("tab", BufferKind.WEIGHT, DType.F32, (5, 2))
    row = b.new_buffer("row", BufferKind.ACTIVATION, DType.F32, (1, 1, 2))
    kc = b.new_buffer("kc", BufferKind.KV_CACHE, DType.F32, (4, 1, 2))
    embed = b.add_task(K.EMBED, [ids, tab], [row], params={"hidden": 2}, label="embed")
    b.add_task(K.KV_APPEND, [row, kc], [kc], waits=[b.after(embed)], params={"pos": pos}, label="append")
    return b.build()
