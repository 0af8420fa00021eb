"""The race checks' round-5 shortcuts change no diagnostic (spec §3.3): each is switched off and
the findings compared byte for byte, and each memo is compared with the function it memoises.

- provenance: a buffer whose readers are exactly the tasks waiting on the counter that all its
  writers (that counter's producers) signal is skipped whole (``succs``/``producers``);
- write-write: writers that are exactly one counter's producers need no counter set;
- the index shares one write-region list between buffers whose regions are the same objects
  (coverage and write-write key their memos by its id);
- reachability: a chain of first predecessors, a few steps deep, answers a pair before any pass;
- ``read_region``/``write_region`` of an operand named once take its region without
  :func:`~amkspec.footprint.region_of`'s list, and coverage's :class:`races._Repeated`
  (a buffer named at every operand) equals :func:`region_of`.

Switching off is done on the index the checks read (``succs``/``producers`` that match nothing,
a write-list table that shares nothing, regions as fresh copies or as one object per value,
``_WALK`` 0). Near misses of each shortcut (a second writer under another counter, one region
object over two shapes, two reads of one shared tile list) are stated directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

import attrs
from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import EMPTY, Region, region_of
from amkspec.ir import Buffer, BufferKind, Counter, DType, InstructionKind, MegakernelProgram, Task, Wait
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import races, reach
from amkspec.proofs.diagnostics import Diagnostic
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.reach import Reachability
from tests.proofs.test_index import malformed_programs, runs_programs
from tests.proofs.test_race_fast_paths import _closure
from tests.proofs.test_race_oracles import _mutated, _odd_programs


@st.composite
def _tile_programs(draw: Any) -> MegakernelProgram:
    """Column tiles of an [8, 8] activation under two counters (disjoint, overlapping or missing
    columns), read as row tiles of a weight by tasks that wait on some of the counters; the tasks
    in list order or shuffled. Exactly the shapes the shortcuts look for, and their near misses."""
    buffers = [
        Buffer(0, "x", BufferKind.IO_INPUT, DType.F32, (8, 4)),
        Buffer(1, "w", BufferKind.WEIGHT, DType.F32, (8, 4)),
        Buffer(2, "t", BufferKind.ACTIVATION, DType.F32, (8, 8)),
        Buffer(3, "q", BufferKind.IO_INPUT, DType.F32, (1, 8)),
    ]
    n_writers, n_readers = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    tasks: list[Task] = []
    for i in range(n_writers):
        width, off = draw(st.sampled_from([(4, 0), (4, 4), (4, 0), (8, 0), (4, 2)]))
        tasks.append(
            Task(
                id=i,
                op=InstructionKind.GEMV_TILE,
                inputs=[0, 1],
                outputs=[2],
                out_counter=draw(st.sampled_from([0, 0, 1])),
                params={"K": 4, "N_tile": width, "n_off": off},
            )
        )
    made = [sum(t.out_counter == c for t in tasks) for c in (0, 1)]
    for i in range(n_readers):
        out = len(buffers)
        buffers.append(Buffer(out, f"y{i}", BufferKind.ACTIVATION, DType.F32, (1, 8)))
        counters = draw(st.sampled_from([[0], [0], [0, 1], [1], []]))
        tasks.append(
            Task(
                id=n_writers + i,
                op=InstructionKind.GEMV_TILE,
                inputs=[3, 2],
                outputs=[out],
                out_counter=2 + i,
                params={"K": 8, "N_tile": 4, "n_off": draw(st.sampled_from([0, 4]))},
                waits=[Wait(c, made[c]) for c in counters],
            )
        )
    if draw(st.booleans()):
        tasks = draw(st.permutations(tasks))
    return MegakernelProgram(
        buffers=buffers, counters=[Counter(c) for c in range(2 + n_readers)], tasks=tasks
    )


_PROGRAMS = st.one_of(
    _tile_programs(),
    _mutated(),
    runs_programs(),
    malformed_programs(),
    _odd_programs(),
    valid_programs(16),
    arbitrary_programs(),
)
_CHECKS = (races.check_provenance, races.check_write_write, races.check_coverage)


def _findings(ix: ProgramIndex) -> list[list[Diagnostic]]:
    """Every diagnostic of the three checks, in order (attrs equality: code, severity, clause,
    message, tasks, buffers, counters)."""
    return [list(check(ix)) for check in _CHECKS]


class _Unshared(dict[Any, Any]):
    """A ``_write_lists`` table that shares nothing: each buffer keeps its own list."""

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default


def _regions_as(ix: ProgramIndex, how: str) -> None:
    """Every task's regions as fresh equal copies (no identity memo can hit) or as one object per
    distinct value across all buffers and shapes (every identity memo is asked its hardest)."""
    ix.regions(0)  # the batch
    one: dict[Region, Region] = {}

    def again(r: Region) -> Region:
        return attrs.evolve(r) if how == "copies" else one.setdefault(r, r)

    for pos, found in enumerate(ix._regions):
        if found is not None:
            ids_in, reads, ids_out, writes = found
            ix._regions[pos] = (ids_in, [*map(again, reads)], ids_out, [*map(again, writes)])


@given(
    _PROGRAMS,
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["as built", "copies", "one per value"]),
)
def test_each_shortcut_switched_off_gives_the_same_findings(
    prog: MegakernelProgram, waits: bool, producers: bool, shared: bool, walk: bool, regions: str
) -> None:
    expected = _findings(ProgramIndex(prog))
    ix = ProgramIndex(prog)
    if regions != "as built" and ix.n:
        _regions_as(ix, regions)
    if waits:  # no readers list equals a successor list: every read goes through the loop
        ix.succs = [None] * ix.n  # type: ignore[list-item]
    if producers:  # no writers list equals a producer list: the counter sets decide
        ix.producers = {}
    if not shared:
        ix._write_lists = _Unshared()
    with mock.patch.object(reach, "_WALK", 16 if walk else 0):
        assert _findings(ix) == expected


@given(_PROGRAMS)
def test_write_lists_are_shared_exactly_when_their_regions_are_the_same_objects(
    prog: MegakernelProgram,
) -> None:
    ix = ProgramIndex(prog)
    lists = {bid: ix.write_regions(bid) for bid in ix.writers}
    for bid, writers in ix.writers.items():
        assert lists[bid] == [ix.write_region(w, bid) for w in writers]
        assert ix.write_regions(bid) is lists[bid]  # computed once
    for a, b in zip(lists, list(lists)[1:], strict=False):
        same = [*map(id, lists[a])] == [*map(id, lists[b])]
        assert (lists[a] is lists[b]) == same


@given(_PROGRAMS)
def test_the_region_of_an_operand_named_once_is_region_of(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    for pos in range(ix.n):
        try:
            ids_in, reads, ids_out, writes = ix.regions(pos)
        except Exception:  # noqa: BLE001 - a record task_regions cannot judge: nothing to compare
            continue
        for bid in {*ix.buffers, -1}:
            assert ix.read_region(pos, bid) == (region_of(ids_in, reads, bid) if bid in ids_in else EMPTY)
            assert ix.write_region(pos, bid) == (region_of(ids_out, writes, bid) if bid in ids_out else EMPTY)


_REGIONS = st.sampled_from(
    [Region(None), Region(()), Region((((0, 1), (0, 4)),)), Region((((0, 1), (2, 4)),)), EMPTY]
)


@given(st.lists(st.integers(0, 2), max_size=4), st.data())
def test_a_repeated_operand_is_region_of(ids: list[int], data: st.DataObject) -> None:
    reads = [data.draw(_REGIONS) for _ in ids]
    repeated = races._Repeated()
    for bid in (0, 1, 2, 0, 1, 2):  # the second round hits the memo
        assert repeated(ids, reads, bid) == region_of(ids, reads, bid)


@st.composite
def _deep_dags(draw: Any) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Forward DAGs (edges from lower to higher positions) made of long chains with side edges,
    so that first-predecessor chains are longer than the walk, and query pairs."""
    n = draw(st.integers(2, 60))
    preds: list[list[int]] = [[] for _ in range(n)]
    for b in range(1, n):
        if draw(st.integers(0, 5)):
            preds[b].append(draw(st.integers(max(0, b - 3), b - 1)))
        preds[b].extend(draw(st.lists(st.integers(0, b - 1), max_size=2)))
        preds[b] = sorted(set(preds[b]))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=16))
    return preds, pairs


@given(_deep_dags(), st.booleans())
def test_the_first_predecessor_walk_equals_the_transitive_closure(
    dag: tuple[list[list[int]], list[tuple[int, int]]], in_list_order: bool
) -> None:
    preds, pairs = dag
    topo = list(range(len(preds)))
    expected = {(a, b) for a, b in pairs if a in _closure(preds, b)}
    assert Reachability(preds, topo, in_list_order=in_list_order).ancestors(pairs) == expected
    with mock.patch.object(reach, "_WALK", 0):
        assert Reachability(preds, topo).ancestors(pairs) == expected


def test_a_residual_read_is_answered_by_the_walk_and_counted_as_a_search() -> None:
    chain = [[], [0], [1], [2], [3]]  # 0 → 1 → 2 → 3 → 4
    engine = Reachability(chain, [0, 1, 2, 3, 4], in_list_order=True)
    assert engine.ancestors([(0, 4), (4, 0), (1, 2)]) == {(0, 4), (1, 2)}
    assert engine.bitset_passes == 1 and engine.queries == 3
    long = [[], *([p] for p in range(reach._WALK + 4))]  # a chain longer than the walk
    engine = Reachability(long, list(range(len(long))))
    assert engine.ancestors([(0, len(long) - 1)]) == {(0, len(long) - 1)}


# -- the shortcuts' near misses, one at a time ----------------------------------------------------


def _tiles_program(counters: list[int], reader_waits: list[int]) -> MegakernelProgram:
    """Two column tiles of ``t`` ([0, 4) and [4, 8)) signalling ``counters``, and one task that
    waits on ``reader_waits`` and reads rows [0, 4) of ``t`` (every column) as a weight."""
    buffers = [
        Buffer(0, "x", BufferKind.IO_INPUT, DType.F32, (8, 4)),
        Buffer(1, "w", BufferKind.WEIGHT, DType.F32, (8, 4)),
        Buffer(2, "t", BufferKind.ACTIVATION, DType.F32, (8, 8)),
        Buffer(3, "q", BufferKind.IO_INPUT, DType.F32, (1, 8)),
        Buffer(4, "y", BufferKind.ACTIVATION, DType.F32, (1, 8)),
    ]
    tasks = [
        Task(
            id=i,
            op=InstructionKind.GEMV_TILE,
            inputs=[0, 1],
            outputs=[2],
            out_counter=c,
            params={"K": 4, "N_tile": 4, "n_off": 4 * i},
        )
        for i, c in enumerate(counters)
    ]
    made = {c: counters.count(c) for c in counters}
    tasks.append(
        Task(
            id=2,
            op=InstructionKind.GEMV_TILE,
            inputs=[3, 2],
            outputs=[4],
            out_counter=2,
            params={"K": 8, "N_tile": 4, "n_off": 0},
            waits=[Wait(c, made[c]) for c in reader_waits],
        )
    )
    return MegakernelProgram(buffers=buffers, counters=[Counter(c) for c in range(3)], tasks=tasks)


def _codes(check: Any, prog: MegakernelProgram) -> list[tuple[str, tuple[int, ...]]]:
    return [(d.code, d.tasks) for d in check(ProgramIndex(prog))]


def test_readers_of_one_writers_counter_still_wait_for_the_other_writer() -> None:
    # the reader is every waiter of tile 0's counter, but tile 1 signals another counter
    assert _codes(races.check_provenance, _tiles_program([0, 1], [0])) == [("R303", (2, 1))]
    assert _codes(races.check_provenance, _tiles_program([0, 0], [0])) == []
    assert _codes(races.check_provenance, _tiles_program([0, 1], [0, 1])) == []


def test_disjoint_tiles_under_two_counters_are_still_a_write_race() -> None:
    assert [c for c, _ in _codes(races.check_write_write, _tiles_program([0, 1], [0, 1]))] == ["R306"]
    assert _codes(races.check_write_write, _tiles_program([0, 0], [0])) == []


def _forced(
    shapes: Sequence[tuple[int, ...]], writes: list[list[Region]], reads: list[Region]
) -> ProgramIndex:
    """An index over activations of ``shapes``: buffer ``i`` written by tasks whose regions are
    ``writes[i]`` (the given objects) and read by one task whose region is ``reads[i]``."""
    n = len(shapes)
    buffers = [Buffer(i, f"b{i}", BufferKind.ACTIVATION, DType.F32, s) for i, s in enumerate(shapes)]
    buffers += [Buffer(n + i, f"o{i}", BufferKind.ACTIVATION, DType.F32, s) for i, s in enumerate(shapes)]
    tasks: list[Task] = []
    regions: list[Any] = []
    for i, (tiles, read) in enumerate(zip(writes, reads, strict=True)):
        for tile in tiles:
            tasks.append(Task(id=len(tasks), op=InstructionKind.NOP, inputs=[], outputs=[i], out_counter=0))
            regions.append(([], [], [i], [tile]))
        tasks.append(Task(id=len(tasks), op=InstructionKind.NOP, inputs=[i], outputs=[n + i], out_counter=1))
        regions.append(([i], [read], [n + i], [EMPTY]))
    ix = ProgramIndex(MegakernelProgram(buffers=buffers, counters=[Counter(0), Counter(1)], tasks=tasks))
    ix.regions(0)
    ix._regions[:] = regions
    return ix


def _gaps(ix: ProgramIndex) -> list[int]:
    return [d.buffers[0] for d in races.check_coverage(ix) if d.code == "R308"]


def test_coverage_memos_keyed_by_identity_respect_the_shape_and_the_read() -> None:
    left, right, part = (Region((((0, 1), (lo, hi)),)) for lo, hi in ((0, 4), (4, 8), (4, 6)))
    full8, unknown = Region((((0, 1), (0, 8)),)), Region(None, exact=False, note="?")
    row16 = Region((((0, 1), (0, 16)),))
    for long in (1, 0):  # the [1, 16] buffer second, then first
        shapes = [(1, 8), (1, 8)]
        shapes[long] = (1, 16)
        # the same tiles (one shared list) over [1, 8] and [1, 16], each read unknown: a gap in [1, 16]
        assert _gaps(_forced(shapes, [[left, right]] * 2, [unknown] * 2)) == [long]
        # one writer of the same [0, 8) region: all of [1, 8], half of [1, 16]
        reads = [full8, full8]
        reads[long] = row16
        assert _gaps(_forced(shapes, [[full8]] * 2, reads)) == [long]
        # the same tiles with a hole at [6, 8), read by two tasks: only the one reading [4, 8) sees it
        reads = [left, left]
        reads[long] = right
        assert _gaps(_forced([(1, 8), (1, 8)], [[left, part]] * 2, reads)) == [long]


def test_the_region_of_an_operand_named_twice_is_their_union() -> None:
    ix = _forced([(1, 8)], [[Region((((0, 1), (0, 8)),))]], [EMPTY])
    first, second = Region((((0, 1), (0, 4)),)), Region((((0, 1), (4, 8)),))
    ix._regions[1] = ([0, 0], [first, second], [1], [EMPTY])
    assert (
        ix.read_region(1, 0)
        == region_of([0, 0], [first, second], 0)
        == Region((((0, 1), (0, 4)), ((0, 1), (4, 8))))
    )
