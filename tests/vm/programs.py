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
