"""Graph indexing of spec §2: dependency edges, producers, writers, Kahn's topological order."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest
from hypothesis import given

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait, load
from amkspec.ir.graph import (
    dependency_edges,
    kahn_order,
    kahn_walk,
    producers_by_counter,
    readers_by_buffer,
    successors,
    topological_order,
    writers_by_buffer,
)
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from tests.conftest import FIXTURES

FIXTURE_PROGRAMS = [
    FIXTURES / "toy1L__default.json",
    FIXTURES / "toy2L__splitkv4__pos47.json",
    FIXTURES / "toy1L__default.pos2.json.gz",
]


def _fifo_kahn(prog: MegakernelProgram) -> list[int] | None:
    """Kahn's algorithm exactly as OPS_FACTS §12 describes the reference, written independently."""
    ids = sorted({t.id for t in prog.tasks})
    edges: set[tuple[int, int]] = set()
    for b in prog.tasks:
        for w in b.waits:
            edges |= {(a.id, b.id) for a in prog.tasks if a.out_counter == w.counter}
    indegree = {i: sum(1 for _, y in edges if y == i) for i in ids}
    queue = deque(i for i in ids if indegree[i] == 0)
    order = []
    while queue:
        n = queue.popleft()
        order.append(n)
        for m in sorted(y for x, y in edges if x == n):
            indegree[m] -= 1
            if indegree[m] == 0:
                queue.append(m)
    return order if len(order) == len(ids) else None


def _chain() -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("tiles")
    for i in range(2):
        b.add_task(InstructionKind.GEMV_TILE, [x, x], [y], out_counter=c, params={"n_off": 2 * i})
    b.add_task(InstructionKind.COPY, [y], [z], waits=[b.join(c), (c, 2)])
    return b.build()


def test_edges_are_sorted_deduplicated_and_per_producer() -> None:
    prog = _chain()
    assert dependency_edges(prog) == [(0, 2), (1, 2)]
    assert producers_by_counter(prog) == {0: [0, 1], 1: [2]}
    assert writers_by_buffer(prog) == {1: [0, 1], 2: [2]}
    assert readers_by_buffer(prog) == {0: [0, 1], 1: [2]}
    assert successors(prog) == {0: [2], 1: [2], 2: []}
    assert topological_order(prog) == [0, 1, 2]


def test_self_edges_are_kept_and_make_a_cycle() -> None:
    prog = _chain()
    prog.tasks[2].waits.append(Wait(prog.tasks[2].out_counter, 1))
    assert (2, 2) in dependency_edges(prog)
    assert topological_order(prog) is None


def test_cycle_gives_none() -> None:
    prog = _chain()
    prog.tasks[0].waits = [Wait(1, 1)]
    assert topological_order(prog) is None
    assert kahn_order([1, 2], [(1, 2), (2, 1)]) is None


def test_kahn_walk_takes_no_node_on_or_behind_a_cycle() -> None:
    # 2 and 3 form a cycle and 4 waits on 3: the walk takes the sources 1 and 5 only.
    assert kahn_walk([1, 2, 3, 4, 5], [(1, 2), (2, 3), (3, 2), (3, 4)]) == [1, 5]


def test_kahn_is_fifo_from_ascending_zero_indegree_ids() -> None:
    # 3 and 1 are sources; FIFO visits 1, 3, then 1's successors in ascending order, then 3's.
    order = kahn_order([1, 2, 3, 4, 5], [(1, 5), (1, 2), (3, 4)])
    assert order == [1, 3, 2, 5, 4]


@pytest.mark.parametrize("path", FIXTURE_PROGRAMS, ids=lambda p: p.name)
def test_kahn_matches_the_reference_order_on_original_programs(path: Path) -> None:
    prog = load(path)
    order = topological_order(prog)
    assert order is not None
    assert order == _fifo_kahn(prog)
    position = {t: i for i, t in enumerate(order)}
    assert all(position[a] < position[b] for a, b in dependency_edges(prog))


def test_toy_edge_count_matches_the_reference() -> None:
    assert len(dependency_edges(load(FIXTURES / "toy1L__default.json"))) == 33


@given(valid_programs())
def test_order_on_valid_programs_is_a_topological_order(prog: MegakernelProgram) -> None:
    order = topological_order(prog)
    assert order is not None and sorted(order) == sorted(t.id for t in prog.tasks)
    assert order == _fifo_kahn(prog)


@given(arbitrary_programs())
def test_indexing_never_fails_on_broken_programs(prog: MegakernelProgram) -> None:
    edges = dependency_edges(prog)
    assert edges == sorted(set(edges))
    order = topological_order(prog)
    assert order == _fifo_kahn(prog)
    assert sum(len(v) for v in producers_by_counter(prog).values()) == len(prog.tasks)
