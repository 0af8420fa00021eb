"""The program index's column-at-a-time build agrees with the per-task definitions (spec §2)."""

from __future__ import annotations

from hypothesis import given

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait
from amkspec.proofs.index import ProgramIndex, _refs, kahn
from amkspec.strategies import arbitrary_programs, valid_programs


def _users(refs_of: list[list[int]]) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for pos, refs in enumerate(refs_of):
        for b in refs:
            users.setdefault(b, []).append(pos)
    return users


def _check_columns(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    ins = [_refs(getattr(t, "inputs", None), ix.buffers) for t in ix.tasks]
    outs = [_refs(getattr(t, "outputs", None), ix.buffers) for t in ix.tasks]
    assert ix.inputs == ins and ix.outputs == outs
    for got, want in ((ix.readers, _users(ins)), (ix.writers, _users(outs))):
        assert got == want and list(got) == list(want)  # same lists, keys in order of first use
    ocs = [getattr(t, "out_counter", None) for t in ix.tasks]
    assert ix.out_counter == [c if type(c) is int else None for c in ocs]
    assert ix.producers == _users([[c] if type(c) is int else [] for c in ocs])


def _check_edges(prog: MegakernelProgram) -> None:
    """Spec §2 edges, task by task: ``a → b`` for every producer ``a`` of a counter ``b`` waits on."""
    ix = ProgramIndex(prog)
    tables = [
        [(i, w.counter, w.threshold) for i, w in enumerate(ws) if type(w) is Wait and type(w.counter) is int]
        if type(ws := getattr(t, "waits", None)) is list
        else []
        for t in ix.tasks
    ]
    assert [list(w) for w in ix.waits] == tables
    assert [list(c) for c in ix.wait_counters] == [[c for _, c, _ in table] for table in tables]
    preds: list[list[int]] = []
    self_waiting, n_edges = [], 0
    for pos, table in enumerate(tables):
        found = sorted({p for _, c, _ in table for p in ix.producers.get(c, [])})
        n_edges += len(found)
        if pos in found:
            found.remove(pos)
            self_waiting.append(pos)
        preds.append(found)
    succs: list[list[int]] = [[] for _ in preds]
    for pos, found in enumerate(preds):
        for p in found:
            succs[p].append(pos)
    assert [list(p) for p in ix.preds] == preds and [list(s) for s in ix.succs] == succs
    assert ix.self_waiting == self_waiting and ix.n_edges == n_edges


@given(arbitrary_programs())
def test_edges_agree_with_the_per_task_definition_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    _check_edges(prog)


@given(valid_programs(max_tasks=12))
def test_edges_agree_with_the_per_task_definition_on_valid_programs(prog: MegakernelProgram) -> None:
    _check_edges(prog)


def test_self_waits_and_multi_counter_waits_make_the_defined_edges() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    c1, c2 = b.new_counter("a"), b.new_counter("b")
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c1)
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c1, waits=[Wait(c1, 1)])
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c2, waits=[Wait(c1, 2), Wait(c2, 1), Wait(c1, 2)])
    b.add_task(InstructionKind.COPY, [y], [y], out_counter=c2, waits=[Wait(c1, 2)])
    prog = b.build()
    _check_edges(prog)
    ix = ProgramIndex(prog)
    assert ix.self_waiting == [1, 2] and [list(s) for s in ix.succs] == [[1, 2, 3], [2, 3], [], [2]]


@given(arbitrary_programs())
def test_columns_agree_with_per_task_refs_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    _check_columns(prog)


@given(valid_programs(max_tasks=12))
def test_columns_agree_with_per_task_refs_on_valid_programs(prog: MegakernelProgram) -> None:
    _check_columns(prog)


@given(valid_programs(max_tasks=12))
def test_forward_means_list_order_is_topological(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    assert ix.forward == all(p < pos for pos, preds in enumerate(ix.preds) for p in preds)
    if ix.forward:
        assert kahn(ix.n, ix.preds, ix.succs) is not None


def test_a_backward_edge_clears_forward() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("y")
    b.add_task(InstructionKind.COPY, [y], [z], waits=[Wait(c, 1)])
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c)
    ix = ProgramIndex(b.build())
    assert not ix.forward and ix.acyclic and ix.topo == [1, 0]


def test_a_buffer_named_twice_is_one_reference_and_one_use() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.ADD, [x, x], [y])
    b.add_task(InstructionKind.MUL, [x, y, x], [y])
    prog = b.build()
    _check_columns(prog)
    ix = ProgramIndex(prog)
    assert ix.inputs == [[x], [x, y]] and ix.readers == {x: [0, 1], y: [1]}
    assert prog.tasks[0].inputs == [x, x]  # the record is left as it was
