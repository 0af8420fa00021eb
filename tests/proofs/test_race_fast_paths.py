"""The race checks' shortcuts change no verdict (spec §3.3): each fast path is compared with the
general computation it skips, and a case just outside it still gets its diagnostic.

- footprint memo: one :class:`~amkspec.footprint.Memo` over many tasks gives every task the
  footprint a fresh memo gives it (ids are exact ints: ``True`` is not buffer 1);
- ``first_overlap``: disjoint column tiles are recognised without the sweep, and its answer
  always equals the sweep's;
- the one-axis gap merge of ``uncovered`` leaves exactly the elements no cover writes;
- provenance: a reader that waits directly on the one counter all writers signal needs no
  happens-before query, and a reader that misses one writer's counter is still reported (R303);
- coverage: a whole-buffer writer covers the other readers, not itself, and column tiles that
  leave a gap are reported (R308);
- the index's batched footprints equal each task's own (a buffer named twice, ``True`` as an id);
- reachability (bitset passes and the one-pair search) equals the transitive closure;
- coverage and write-write memos keyed by shared Region objects report every layer with a gap
  or an overlap;
- page aliasing: a gate (a first write whose predecessors every other write shares) saves
  queries and changes no diagnostic.
"""

from __future__ import annotations

import itertools
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import (
    Box,
    Memo,
    Region,
    first_overlap,
    task_footprint,
    task_regions,
    uncovered,
)
from amkspec.footprint.regions import _disjoint_tiles, _sweep_overlap
from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import races, validate
from amkspec.proofs.index import ProgramIndex, kahn
from amkspec.proofs.reach import Reachability

K = InstructionKind
F32 = DType.F32


# -- the footprint memo ------------------------------------------------------------------------


@given(st.one_of(arbitrary_programs(), valid_programs(12)))
def test_a_shared_memo_gives_every_task_its_fresh_footprint(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    shared = Memo()
    for task in ix.tasks:
        assert task_footprint(task, ix.buffers, shared) == task_footprint(task, ix.buffers, Memo())


def _tile_program(first_inputs: list[Any]) -> MegakernelProgram:
    b = ProgramBuilder()
    w = b.new_buffer("w", BufferKind.WEIGHT, F32, (4, 4))
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, F32, (1, 4))
    c = b.new_counter("y")
    for i, ins in enumerate((first_inputs, [x, w])):
        b.add_task(K.GEMV_TILE, ins, [y], out_counter=c, params={"K": 4, "N_tile": 2, "n_off": 2 * i})
    return b.build()


def test_true_is_not_buffer_one_even_after_a_cached_task() -> None:
    # task 0 names True where buffer 1 belongs (True == 1 in Python); task 1 names buffer 1
    prog = _tile_program([True, 0])
    ix = ProgramIndex(prog)
    memo = Memo()
    bad = task_footprint(ix.tasks[0], ix.buffers, memo)
    good = task_footprint(ix.tasks[1], ix.buffers, memo)
    assert not bad.exact
    assert good.exact and good.write(2) == Region((((0, 1), (2, 4)),))


# -- first_overlap -----------------------------------------------------------------------------


@st.composite
def _tiles(draw: Any) -> list[Region]:
    """Single-box regions of a [2, 12] buffer, mostly column tiles, sometimes not."""
    regions = []
    for _ in range(draw(st.integers(0, 6))):
        lo = draw(st.integers(0, 12))
        hi = draw(st.integers(0, 12))
        rows = draw(st.sampled_from([(0, 2), (0, 2), (0, 2), (0, 1), (1, 2)]))
        shape = draw(st.sampled_from(["box", "box", "box", "none", "empty", "two"]))
        box = (rows, (lo, hi))
        if shape == "none":
            regions.append(Region(None))
        elif shape == "empty":
            regions.append(Region(()))
        elif shape == "two":
            regions.append(Region((box, ((0, 2), (hi, hi + 1)))))
        else:
            regions.append(Region((box,)))
    return regions


@given(_tiles())
def test_first_overlap_equals_the_sweep(regions: list[Region]) -> None:
    assert first_overlap(regions) == _sweep_overlap(regions)


def test_column_tiles_skip_the_sweep_only_when_disjoint() -> None:
    def tile(lo: int, hi: int) -> Region:
        return Region((((0, 1), (lo, hi)),))

    apart = [tile(4, 6), tile(0, 2), tile(2, 4)]
    assert _disjoint_tiles(apart) and first_overlap(apart) is None
    clash = [tile(0, 2), tile(2, 4), tile(3, 5)]
    assert not _disjoint_tiles(clash) and first_overlap(clash) == (1, 2)
    rows = [tile(0, 2), Region((((1, 2), (0, 2)),))]  # differ on the row axis: the sweep decides
    assert not _disjoint_tiles(rows) and first_overlap(rows) is None


# -- uncovered -------------------------------------------------------------------------------


def _cells(boxes: list[Box] | tuple[Box, ...]) -> set[tuple[int, ...]]:
    return {cell for box in boxes for cell in itertools.product(*(range(lo, hi) for lo, hi in box))}


@given(_tiles(), st.sampled_from([None, ((0, 2), (0, 12)), ((0, 2), (3, 9)), ((1, 2), (0, 12))]))
def test_uncovered_leaves_exactly_the_unwritten_elements(covers: list[Region], target: Box | None) -> None:
    shape = (2, 12)
    want = _cells([target] if target is not None else [((0, 2), (0, 12))])
    for cover in covers:
        want -= _cells(cover.boxes if cover.boxes is not None else [((0, 2), (0, 12))])
    got = uncovered(Region((target,) if target is not None else None), covers, shape)
    assert _cells(got) == want


# -- provenance and coverage -----------------------------------------------------------------


def _tiled(
    n_off: tuple[int, ...] = (0, 2), waits: str = "join", same_counter: bool = True
) -> MegakernelProgram:
    """Tiles of ``y = x @ W.T`` into [1, 4] (two columns each), then ``out = COPY(y)``. Tiles under
    their own counters run one after the other; ``waits="first"`` makes the COPY wait on the first
    tile's counter only."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 4))
    w = b.new_buffer("w", BufferKind.WEIGHT, F32, (4, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, F32, (1, 4))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, F32, (1, 4))
    shared = b.new_counter("y")
    tiles: list[int] = []
    for off in n_off:
        order = [b.after(tiles[-1])] if tiles and not same_counter else []
        tiles.append(
            b.add_task(
                K.GEMV_TILE, [x, w], [y], out_counter=shared if same_counter else None, waits=order,
                params={"K": 4, "N_tile": 2, "n_off": off}, label=f"t{off}",
            )
        )
    counters = sorted({b.tasks[t].out_counter for t in tiles})
    chosen = counters if waits == "join" else counters[:1]
    b.add_task(K.COPY, [y], [out], waits=[b.join(c) for c in chosen], label="copy")
    return b.build()


def test_a_reader_of_the_shared_tile_counter_is_ordered_without_queries() -> None:
    result = validate(_tiled())
    assert result.ok and result.codes == []
    assert result.stats["reach_queries"] == 0


def test_a_reader_that_misses_one_writer_counter_is_reported() -> None:
    assert validate(_tiled(same_counter=False)).codes == []  # waits on both counters: fine
    result = validate(_tiled(same_counter=False, waits="first"))
    assert result.codes == ["R303"], result.report()
    assert "writer(s) 1:t2 are not ordered" in result.diagnostics[0].message


def test_a_writer_without_out_counter_is_never_taken_as_waited() -> None:
    prog = _tiled()
    prog.tasks[1].out_counter = None  # the second tile signals nothing
    assert "R303" in validate(prog).codes


def test_column_tiles_with_a_gap_are_reported() -> None:
    assert validate(_tiled(n_off=(0, 2))).codes == []
    assert validate(_tiled(n_off=(0,))).codes == ["R308"]


def test_overlapping_tiles_under_one_counter_are_reported() -> None:
    result = validate(_tiled(n_off=(0, 1, 2)))
    assert "R306" in result.codes


def test_a_whole_writer_that_reads_the_buffer_covers_no_read() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, F32, (1, 4))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, F32, (1, 4))
    first = b.add_task(K.COPY, [x], [y], label="first")
    # 'again' writes all of y and also reads it: it covers the copy's read, not its own
    again = b.add_task(K.ADD, [y, x], [y], waits=[b.after(first)], label="again")
    b.add_task(K.COPY, [y], [out], waits=[b.after(again)], label="copy")
    assert validate(b.build()).codes == []
    prog = b.build()
    prog.tasks = prog.tasks[1:]  # without 'first', 'again' reads elements only it writes
    for pos, task in enumerate(prog.tasks):
        task.id = pos
    prog.tasks[0].waits = []
    prog.tasks[1].waits = [Wait(prog.tasks[0].out_counter, 1)]
    assert validate(prog).codes == ["R304"]


# -- round 2: batched footprints, reachability, memos shared by layers, page meeting points ---


def _regions_as_tuples(found: Any) -> tuple[Any, ...]:
    ids_in, reads, ids_out, writes = found
    return tuple(ids_in), reads, tuple(ids_out), writes


@st.composite
def _programs_with_odd_ids(draw: Any) -> MegakernelProgram:
    """Arbitrary or valid programs, sometimes with a buffer named twice or ``True`` as an id."""
    prog = draw(st.one_of(arbitrary_programs(), valid_programs(12)))
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    for task in tasks:
        how = draw(st.integers(0, 5))
        if how == 0 and isinstance(task.inputs, list) and task.inputs:
            task.inputs = [*task.inputs, task.inputs[0]]  # a buffer named twice
        elif how == 1 and isinstance(task.inputs, list):
            task.inputs = [True if b == 1 else b for b in task.inputs]
    return prog


@given(_programs_with_odd_ids())
def test_batched_footprints_equal_each_tasks_own(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    for pos, task in enumerate(ix.tasks):
        expected = task_regions(task, ix.buffers, Memo())
        assert _regions_as_tuples(ix.regions(pos)) == _regions_as_tuples(expected)


Dag = tuple[list[list[int]], list[tuple[int, int]]]


@st.composite
def _dags(draw: Any) -> Dag:
    """Predecessor lists of a DAG over positions (edges from lower to higher positions, then
    positions renamed) and query pairs."""
    n = draw(st.integers(1, 14))
    edges = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    name = draw(st.permutations(range(n)))
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        if a < b:
            preds[name[b]].append(name[a])
    for p in preds:
        p.sort()
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12))
    return preds, pairs


def _closure(preds: list[list[int]], b: int) -> set[int]:
    seen: set[int] = set()
    todo = list(preds[b])
    while todo:
        a = todo.pop()
        if a not in seen:
            seen.add(a)
            todo.extend(preds[a])
    return seen


@given(_dags())
def test_reachability_equals_the_transitive_closure(dag: Dag) -> None:
    preds, pairs = dag
    succs: list[list[int]] = [[] for _ in preds]
    for b, ps in enumerate(preds):
        for a in ps:
            succs[a].append(b)
    topo = kahn(len(preds), preds, succs)
    assert topo is not None
    expected = {(a, b) for a, b in pairs if a in _closure(preds, b)}
    assert Reachability(preds, topo).ancestors(pairs) == expected
    for pair in pairs:  # one pair at a time: the depth-first search
        assert Reachability(preds, topo).ancestors([pair]) == expected & {pair}


def _two_tiled_layers(offsets: tuple[tuple[int, ...], tuple[int, ...]]) -> MegakernelProgram:
    """Two independent layers: GEMV tiles at ``offsets[i]`` (N_tile 2) of a [1, 4] activation
    under one counter, copied to an output. Equal tiles share their Region objects."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 4))
    w = b.new_buffer("w", BufferKind.WEIGHT, F32, (4, 4))
    for layer, offs in enumerate(offsets):
        y = b.new_buffer(f"y{layer}", BufferKind.ACTIVATION, F32, (1, 4))
        out = b.new_buffer(f"out{layer}", BufferKind.IO_OUTPUT, F32, (1, 4))
        c = b.new_counter(f"y{layer}")
        for off in offs:
            b.add_task(K.GEMV_TILE, [x, w], [y], out_counter=c, params={"K": 4, "N_tile": 2, "n_off": off})
        b.add_task(K.COPY, [y], [out], waits=[b.join(c)], label=f"copy{layer}")
    return b.build()


def test_every_layer_with_the_same_gap_or_overlap_is_reported() -> None:
    assert validate(_two_tiled_layers(((0, 2), (0, 2)))).codes == []
    gaps = validate(_two_tiled_layers(((0,), (0,))))
    assert [(d.code, d.buffers) for d in gaps.diagnostics] == [("R308", (2,)), ("R308", (4,))]
    assert [d.buffers for d in validate(_two_tiled_layers(((0, 2), (0,)))).diagnostics] == [(4,)]
    overlaps = validate(_two_tiled_layers(((0, 1, 2), (0, 1, 2))))
    assert [(d.code, d.buffers) for d in overlaps.diagnostics] == [("R306", (2,)), ("R306", (4,))]


def _paged(model: str) -> MegakernelProgram:
    from amkspec.ir import ScheduleConfig
    from amkspec.lower import lower

    config = ScheduleConfig(page_allocation="graph_color", tiling={"gemv": {"N_tile": 64}})
    return lower(model, "h100", config, pos=0, compat=False)


def test_page_gates_save_queries_and_change_no_verdict() -> None:
    prog = _paged("toy-2L")
    with_meet = validate(prog)
    with mock.patch.object(races, "_gate", lambda ix, first_write, writers: None):
        every_pair = validate(prog)
    assert with_meet.ok and every_pair.ok
    assert with_meet.stats["reach_queries"] < every_pair.stats["reach_queries"]


@given(valid_programs(24, assign_sms=True, allocate_pages=True), st.data())
def test_page_gates_change_no_diagnostic(prog: MegakernelProgram, data: st.DataObject) -> None:
    for task in prog.tasks:  # drop some waits so that some occupants are no longer ordered
        if task.waits and data.draw(st.integers(0, 3)) == 0:
            task.waits = task.waits[1:]
    found = validate(prog).diagnostics
    with mock.patch.object(races, "_gate", lambda ix, first_write, writers: None):
        assert validate(prog).diagnostics == found
