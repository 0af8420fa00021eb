"""The program index's fast build agrees with the per-task definitions of spec §2 on every program:
valid, arbitrary, built from runs of equal waits (the tiles of one operation), and malformed
(records that are not records, fields of the wrong type, ``True``/``1.0`` where an id belongs).

:func:`_direct` restates every table of :class:`ProgramIndex` one task at a time, the way the
spec defines it; the tests compare every attribute, including the key order of the maps."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import (
    Buffer,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    Task,
    Wait,
)
from amkspec.ir.graph import kahn_order
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.deadlock import check_waits, may_be_unsatisfiable, unsatisfiable_waits
from amkspec.proofs.index import ProgramIndex, kahn
from amkspec.proofs.outputs import check_outputs

# -- the definitions, one task at a time -----------------------------------------------------------


def _first_by_id(records: Any) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for rec in list(records) if isinstance(records, (list, tuple)) else []:
        rid = getattr(rec, "id", None)
        if type(rid) is int and rid not in out:
            out[rid] = rec
    return out


def _users(refs_of: list[list[int]]) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for pos, refs in enumerate(refs_of):
        for b in refs:
            users.setdefault(b, []).append(pos)
    return users


def _direct(prog: MegakernelProgram) -> dict[str, Any]:
    """Every ProgramIndex table by its definition (spec §2)."""
    tasks = list(prog.tasks) if isinstance(prog.tasks, list) else []
    buffers, counters = _first_by_id(prog.buffers), _first_by_id(prog.counters)

    def refs(field: Any) -> list[int]:
        if not isinstance(field, (list, tuple)):
            return []
        return list(dict.fromkeys(b for b in field if type(b) is int and b in buffers))

    inputs = [refs(getattr(t, "inputs", None)) for t in tasks]
    outputs = [refs(getattr(t, "outputs", None)) for t in tasks]
    out_counter = [c if type(c := getattr(t, "out_counter", None)) is int else None for t in tasks]
    producers = _users([[c] if c is not None else [] for c in out_counter])
    waits = [
        [(i, w.counter, w.threshold) for i, w in enumerate(ws) if type(w) is Wait and type(w.counter) is int]
        if type(ws := getattr(t, "waits", None)) is list
        else []
        for t in tasks
    ]
    preds: list[list[int]] = []
    self_waiting, n_edges = [], 0
    for pos, table in enumerate(waits):
        found = sorted({p for _, c, _ in table for p in producers.get(c, [])})
        n_edges += len(found)
        if pos in found:
            found.remove(pos)
            self_waiting.append(pos)
        preds.append(found)
    succs: list[list[int]] = [[] for _ in preds]
    for pos, found in enumerate(preds):
        for p in found:
            succs[p].append(pos)
    forward = all(p < pos for pos, found in enumerate(preds) for p in found)
    highest: dict[int, int] = {}
    for table in waits:
        for _, c, t in table:
            value = t if type(t) is int else 0
            highest[c] = max(highest.get(c, value), value)
    lowest: dict[int, int] = {}
    for table in waits:
        for _, c, t in table:
            if type(t) is int:
                lowest[c] = min(lowest.get(c, t), t)
    return {
        "tasks": tasks,
        "buffers": buffers,
        "counters": counters,
        "inputs": inputs,
        "outputs": outputs,
        "readers": _users(inputs),
        "writers": _users(outputs),
        "out_counter": out_counter,
        "producers": producers,
        "waits": waits,
        "wait_counters": [[c for _, c, _ in table] for table in waits],
        "preds": preds,
        "succs": succs,
        "self_waiting": self_waiting,
        "n_edges": n_edges,
        "forward": forward,
        "max_threshold": highest,
        "min_threshold": lowest,
        "lowest_threshold": min(lowest.values(), default=None),
        "buffer_kinds": [getattr(b, "kind", None) for b in buffers.values()],
        "topo": list(range(len(tasks)))
        if forward
        else kahn_order(range(len(tasks)), [(p, pos) for pos, found in enumerate(preds) for p in found]),
    }


def _agree(prog: MegakernelProgram) -> ProgramIndex:
    """The index of ``prog`` equals :func:`_direct` in every table (the maps that promise an order
    of their keys, in that order)."""
    ix, want = ProgramIndex(prog), _direct(prog)
    for name, value in want.items():
        got = getattr(ix, name)
        if name in ("waits", "wait_counters", "preds", "succs"):
            got = [list(v) for v in got]
        assert got == value, name
        if name in ("buffers", "counters", "readers", "writers", "producers"):
            assert list(got) == list(value), f"key order of {name}"
    assert all(type(c) is int for c in ix.producers) and all(type(b) is int for b in ix.buffers)
    assert ix.acyclic == (ix.topo is not None and not ix.self_waiting)
    if ix.topo is not None:  # a topological order of the graph without self-edges
        rank = {v: i for i, v in enumerate(ix.topo)}
        assert sorted(ix.topo) == list(range(ix.n))
        assert all(rank[p] < rank[pos] for pos, found in enumerate(ix.preds) for p in found)
        assert ix.reach.rank == [rank[pos] for pos in range(ix.n)]
    return ix


# -- programs ------------------------------------------------------------------------------------

_IDS = st.integers(-1, 6)
_ODD = st.sampled_from([True, False, 1.0, None, "1", 2**70, -(2**70)])
"""Values that are not ids, some equal to one (``True == 1 == 1.0``)."""


@st.composite
def runs_programs(draw: st.DrawFn) -> MegakernelProgram:
    """Tasks over few buffers and counters, many copying the waits of the task before (the tiles of
    one operation): runs, a threshold changing within a run, several producers per counter,
    self-waits, backward edges, cycles, waits on counters nobody produces, ids named twice."""
    n_buffers, n_counters = draw(st.integers(0, 6)), draw(st.integers(0, 5))
    buffers = [Buffer(i, f"b{i}", BufferKind.ACTIVATION, DType.F32, (1, 4)) for i in range(n_buffers)]
    counters = [Counter(i) for i in range(n_counters)]
    tasks: list[Task] = []
    waits: list[Wait] = []
    inputs: list[Any] = []
    for pos in range(draw(st.integers(0, 24))):
        same = draw(st.integers(0, 3)) if pos else 0  # the operands of the task before, maybe with
        if same == 0:  # a value equal to one of its ids that is no id (True, 1.0)
            inputs = draw(st.lists(_IDS, max_size=4))
        elif same == 2 and inputs:
            inputs = list(inputs)
            inputs[draw(st.integers(0, len(inputs) - 1))] = draw(_ODD)
        else:
            inputs = list(inputs)
        how = draw(st.integers(0, 5))
        if how >= 2 and pos:  # the same waits as the task before, maybe with another threshold
            waits = [Wait(w.counter, draw(st.integers(0, 3)) if how == 2 else w.threshold) for w in waits]
        else:
            waits = draw(st.lists(st.builds(Wait, _IDS, st.integers(-1, 4)), max_size=3))
        tasks.append(
            Task(
                id=pos,
                op=InstructionKind.COPY,
                inputs=inputs,
                outputs=draw(st.lists(_IDS, max_size=2)),
                out_counter=draw(_IDS),
                waits=waits,
            )
        )
    return MegakernelProgram(buffers=buffers, counters=counters, tasks=tasks)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _corrupt_task(draw: st.DrawFn, t: Task) -> None:
    """One edit that makes a field of ``t`` malformed (``t`` may have been edited before)."""
    how = draw(st.integers(0, 6))
    ins, waits = _items(t.inputs), _items(t.waits)
    if how == 0:
        t.inputs = draw(st.sampled_from([tuple(ins), None, "ab", 3, [*ins, *ins]]))
    elif how == 1:
        t.outputs = [*_items(t.outputs), draw(_ODD)]
    elif how == 2:
        t.inputs = [draw(_ODD), *ins][:3]
    elif how == 3:
        t.out_counter = draw(_ODD)
    elif how == 4:
        t.waits = draw(st.sampled_from([tuple(waits), None, [None], [(0, 1)], [*waits, "w"]]))
    elif how == 5:
        t.waits = [Wait(draw(st.one_of(_IDS, _ODD)), draw(st.one_of(_IDS, _ODD, st.just([1]))))]
    else:
        t.waits = [*waits, Wait(t.out_counter, 1)]


@st.composite
def malformed_programs(draw: st.DrawFn) -> MegakernelProgram:
    """A program with malformed task fields, odd or repeated ids, records that are not records
    (with some, none or all of the fields), or lists that are not lists."""
    prog = draw(st.one_of(runs_programs(), arbitrary_programs(), valid_programs(max_tasks=10)))
    tasks, buffers, counters = prog.tasks, prog.buffers, prog.counters
    records = list(tasks)
    for _ in range(draw(st.integers(0, 4)) if records else 0):
        _corrupt_task(draw, draw(st.sampled_from(records)))
    for _ in range(draw(st.integers(0, 2)) if records else 0):
        t = draw(st.sampled_from(records))
        fields = draw(st.sets(st.sampled_from(["inputs", "outputs", "out_counter", "waits", "id"])))
        tasks.insert(draw(st.integers(0, len(tasks))), SimpleNamespace(**{f: getattr(t, f) for f in fields}))
    if buffers and draw(st.booleans()):  # a repeated or odd buffer id
        b = draw(st.sampled_from(buffers))
        twin = attrs.evolve(b, id=draw(st.one_of(st.just(b.id), _ODD)))
        buffers.insert(draw(st.integers(0, len(buffers))), twin)
    if buffers and draw(st.booleans()):  # a kind equal to a BufferKind but not one (an int)
        b = draw(st.sampled_from(buffers))
        b.kind = int(b.kind)
    if draw(st.booleans()):
        odd_buffer = [object(), SimpleNamespace(id=True), SimpleNamespace(), SimpleNamespace(id=99)]
        buffers.append(draw(st.sampled_from(odd_buffer)))
    if draw(st.booleans()):
        odd = [Counter(0), Counter(True), SimpleNamespace(id=2), object()]
        counters.insert(0, draw(st.sampled_from(odd)))
    lists = draw(st.integers(0, 5))
    if lists == 0:
        prog.buffers, prog.counters = tuple(buffers), None  # type: ignore[assignment]
    elif lists == 1:
        prog.buffers, prog.counters = None, tuple(counters)  # type: ignore[assignment]
    elif lists == 2:
        prog.tasks = draw(st.sampled_from([tuple(tasks), None]))
    return prog


# -- the index against the definitions ---------------------------------------------------------------


@given(st.one_of(arbitrary_programs(), runs_programs()))
def test_the_index_agrees_with_the_definitions_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    _agree(prog)


@given(valid_programs(max_tasks=16))
def test_the_index_agrees_with_the_definitions_on_valid_programs(prog: MegakernelProgram) -> None:
    ix = _agree(prog)
    assert ix.forward and ix.topo == list(range(ix.n))  # valid programs list producers first


@given(malformed_programs())
def test_the_index_agrees_with_the_definitions_on_malformed_programs(prog: MegakernelProgram) -> None:
    _agree(prog)


def test_self_waits_and_multi_counter_waits_make_the_defined_edges() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    c1, c2 = b.new_counter("a"), b.new_counter("b")
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c1)
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c1, waits=[Wait(c1, 1)])
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c2, waits=[Wait(c1, 2), Wait(c2, 1), Wait(c1, 2)])
    b.add_task(InstructionKind.COPY, [y], [y], out_counter=c2, waits=[Wait(c1, 2)])
    ix = _agree(b.build())
    assert ix.self_waiting == [1, 2] and [list(s) for s in ix.succs] == [[1, 2, 3], [2, 3], [], [2]]
    assert ix.max_threshold == {c1: 2, c2: 1} and ix.n_edges == 2 + 4 + 2  # producers of each wait


def test_a_run_of_equal_waits_breaks_where_the_threshold_changes() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    c = b.new_counter("x")
    b.add_task(InstructionKind.COPY, [x], [x], out_counter=c)
    for t in (1, 1, 2, 1):
        b.add_task(InstructionKind.COPY, [x], [x], out_counter=c, waits=[Wait(c, t)])
    ix = _agree(b.build())
    assert [list(w) for w in ix.waits[1:]] == [[(0, c, t)] for t in (1, 1, 2, 1)]
    assert ix.max_threshold == {c: 2} and not ix.forward and ix.topo is None
    assert ix.waits[1] is ix.waits[4]  # one table per (counter, threshold)


def test_a_backward_edge_clears_forward() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("y")
    b.add_task(InstructionKind.COPY, [y], [z], waits=[Wait(c, 1)])
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c)
    ix = _agree(b.build())
    assert not ix.forward and ix.acyclic and ix.topo == [1, 0]


def test_a_buffer_named_twice_is_one_reference_and_one_use() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.ADD, [x, x], [y])
    b.add_task(InstructionKind.MUL, [x, y, x], [y])
    prog = b.build()
    ix = _agree(prog)
    assert ix.inputs == [[x], [x, y]] and ix.readers == {x: [0, 1], y: [1]}
    assert prog.tasks[0].inputs == [x, x]  # the record is left as it was


def test_a_two_id_run_breaks_at_a_value_only_equal_to_an_id() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_INPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    for ids in ([x, y], [x, y], [x, True], [0.0, y], [x, y], [y, y], [y, y], [x, y]):
        b.add_task(InstructionKind.ADD, ids, [z])
    ix = _agree(b.build())
    assert y is True or y == 1
    assert ix.readers == {x: [0, 1, 2, 4, 7], y: [0, 1, 3, 4, 5, 6, 7]} and not ix.plain_inputs


def test_true_is_not_buffer_one_nor_counter_one() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c = b.new_counter("y")
    b.add_task(InstructionKind.COPY, [x], [y], out_counter=c)
    b.add_task(InstructionKind.COPY, [True], [y], out_counter=c, waits=[Wait(True, 1)])
    b.add_task(InstructionKind.COPY, [y], [True], out_counter=True, waits=[Wait(c, True)])
    prog = b.build()
    assert y == 1 and c == 0 and x == 0  # so True == y (buffer) and True == 1 (no counter 1)
    ix = _agree(prog)
    assert ix.inputs == [[x], [], [y]] and ix.outputs == [[y], [y], []]
    assert ix.producers == {c: [0, 1]} and ix.out_counter == [c, c, None]
    assert ix.max_threshold == {c: 0}  # a threshold that is not an int counts as 0


def test_the_list_order_is_topo_exactly_when_every_edge_is_forward() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    c1, c2 = b.new_counter("a"), b.new_counter("b")
    b.add_task(InstructionKind.COPY, [x], [x], out_counter=c1)
    b.add_task(InstructionKind.COPY, [x], [x], out_counter=c2)
    b.add_task(InstructionKind.COPY, [x], [x], out_counter=c2, waits=[Wait(c1, 1)])
    ix = _agree(b.build())
    assert ix.forward and ix.topo == [0, 1, 2]
    assert kahn(ix.n, ix.preds, ix.succs) == [0, 1, 2]


# -- the waits check's screen -------------------------------------------------------------------------


def _rows(found: Any) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.tasks, d.counters) for d in found]


@given(st.one_of(arbitrary_programs(), runs_programs(), malformed_programs(), valid_programs(max_tasks=10)))
def test_the_waits_screen_passes_only_programs_whose_waits_are_satisfiable(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    every = _rows(unsatisfiable_waits(ix))
    assert _rows(check_waits(ix)) == every
    if not may_be_unsatisfiable(ix):
        assert every == []


# -- the outputs check's column of kinds ----------------------------------------------------------------


@given(st.one_of(arbitrary_programs(), malformed_programs(), valid_programs(max_tasks=10)))
def test_the_unproduced_outputs_are_those_of_the_definition(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    want = [
        bid
        for bid, buf in ix.buffers.items()
        if getattr(buf, "kind", None) is BufferKind.IO_OUTPUT and not ix.writers.get(bid)
    ]
    assert [d.buffers for d in check_outputs(ix)] == [(bid,) for bid in want]


def test_an_output_kind_that_is_only_equal_to_io_output_is_no_output() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    prog = b.build()
    prog.buffers[z].kind = int(BufferKind.IO_OUTPUT)  # == IO_OUTPUT, but not the member
    prog.buffers.append(SimpleNamespace(id=7))  # a record without a kind
    assert [d.buffers for d in check_outputs(ProgramIndex(prog))] == [(y,)] and x == 0


@st.composite
def _graphs(draw: st.DrawFn) -> tuple[int, set[tuple[int, int]]]:
    """A graph on ``range(n)``: random edges (cycles and self-loops included) or a random DAG
    (edges from a lower to a higher position of a random permutation)."""
    n = draw(st.integers(0, 12))
    if n == 0:
        return 0, set()
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    edges = draw(st.sets(pairs, max_size=3 * n))
    if draw(st.booleans()):
        rank = {v: i for i, v in enumerate(draw(st.permutations(range(n))))}
        edges = {(a, b) if rank[a] < rank[b] else (b, a) for a, b in edges if a != b}
    return n, edges


@given(_graphs())
def test_kahn_over_positions_is_the_reference_kahn_order(graph: tuple[int, set[tuple[int, int]]]) -> None:
    """The index's :func:`kahn` (positions, the index's sorted predecessor and successor lists) is
    :func:`amkspec.ir.graph.kahn_order`, the reference's Kahn (spec §2): the same order on a DAG,
    None on a cycle."""
    n, edges = graph
    preds: list[list[int]] = [sorted(a for a, b in edges if b == v) for v in range(n)]
    succs: list[list[int]] = [sorted(b for a, b in edges if a == v) for v in range(n)]
    assert kahn(n, preds, succs) == kahn_order(range(n), edges)
