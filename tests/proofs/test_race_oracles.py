"""The footprint batch and the race checks against their definitions (spec §3.3, round 4).

Each fast path is compared with the direct computation it replaces, on valid programs, on
mutated ones and on records no loader would produce:

- the batch :func:`~amkspec.footprint.all_task_regions` equals :func:`task_regions` of each
  task, also for records that are not Tasks, opcodes that are not InstructionKind, params that are
  not dicts, operand tuples, buffers named twice and unusable buffers;
- ``Memo.codes_of`` (every buffer at once) gives each buffer the operand ``Memo.code`` gives it;
- ``union`` of equal regions is their value (boxes repeated once);
- provenance (R303/R305) reports exactly the reads that some other overlapping writer does not
  precede in the transitive closure of the dependency edges;
- coverage (R308) reports exactly the buffers with an element read (or, for IO_OUTPUT, returned)
  that no other task writes, computed element by element.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import Memo, Operand, Region, task_regions, union
from amkspec.ir import READONLY_KINDS, Buffer, BufferKind, DType, InstructionKind, MegakernelProgram
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import races
from amkspec.proofs.index import ProgramIndex

# -- the footprint batch -----------------------------------------------------------------------


def _as_tuples(found: Any) -> tuple[Any, ...]:
    ids_in, reads, ids_out, writes = found
    return tuple(ids_in), reads, tuple(ids_out), writes


@st.composite
def _odd_programs(draw: Any) -> MegakernelProgram:
    """Valid or arbitrary programs with some records no loader makes."""
    prog = draw(st.one_of(valid_programs(10), arbitrary_programs()))
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    for pos, task in enumerate(tasks):
        how = draw(st.integers(0, 9))
        if how == 0:
            fields = ("op", "params", "inputs", "outputs")
            tasks[pos] = types.SimpleNamespace(**{k: getattr(task, k) for k in fields})
        elif how == 1:
            task.op = int(task.op) if isinstance(task.op, InstructionKind) else task.op
        elif how == 2 and isinstance(task.params, dict):
            task.params = types.MappingProxyType(dict(task.params))
        elif how == 3 and isinstance(task.inputs, list):
            task.inputs = tuple(task.inputs)
        elif how == 4 and isinstance(task.inputs, list) and task.inputs:
            task.inputs = [*task.inputs, task.inputs[-1]]  # a buffer named twice
        elif how == 5 and isinstance(task.outputs, list) and task.outputs:
            task.outputs = [*task.outputs, task.outputs[0]]
    buffers = prog.buffers if isinstance(prog.buffers, list) else []
    for buf in buffers:
        how = draw(st.integers(0, 9))
        if how == 0 and isinstance(buf.shape, tuple):
            object.__setattr__(buf, "shape", list(buf.shape))  # unusable operand (no converter)
        elif how == 1 and isinstance(buf.shape, tuple) and buf.shape:
            object.__setattr__(buf, "shape", (True, *buf.shape[1:]))
    return prog


@given(_odd_programs())
def test_the_batch_equals_each_tasks_own_footprint(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    for pos, task in enumerate(ix.tasks):
        assert _as_tuples(ix.regions(pos)) == _as_tuples(task_regions(task, ix.buffers, Memo()))


_SHAPES = st.one_of(
    st.lists(st.integers(0, 5), max_size=3).map(tuple),
    st.lists(st.integers(-2, 5), max_size=3),
    st.tuples(st.booleans(), st.integers(0, 3)),
    st.tuples(st.floats(0, 3), st.integers(0, 3)),
)


@given(st.lists(st.tuples(_SHAPES, st.sampled_from([*DType, 0, "f32"])), max_size=12))
def test_codes_of_every_buffer_at_once_equals_one_at_a_time(specs: list[tuple[Any, Any]]) -> None:
    buffers = {}
    for bid, (shape, dtype) in enumerate(specs):
        buf = buffers[bid] = Buffer(bid, f"b{bid}", BufferKind.ACTIVATION, DType.F32, ())
        object.__setattr__(buf, "shape", shape)  # records as a broken producer may leave them
        object.__setattr__(buf, "dtype", dtype)
    bulk, one = Memo(), Memo()
    codes = bulk.codes_of(buffers)
    assert codes.keys() == buffers.keys()
    for bid in buffers:
        code = one.code(bid, buffers)
        expected = None if code is None else one.operands[code]
        assert (None if codes[bid] is None else bulk.operands[codes[bid]]) == expected
        assert expected == Operand.of_buffer(buffers[bid])


_BOXES = st.lists(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=2, max_size=2).map(tuple),
    max_size=3,
).map(tuple)


@given(st.none() | _BOXES, st.booleans(), st.sampled_from(["", "why"]), st.integers(1, 3), st.booleans())
def test_the_union_of_equal_regions_is_their_value(
    boxes: Any, exact: bool, note: str, copies: int, same: bool
) -> None:
    first = Region(boxes, exact, note)
    regions = [first if same else Region(boxes, exact, note) for _ in range(copies)]
    merged = union(regions)
    assert merged == Region(None if boxes is None else tuple(dict.fromkeys(boxes)), exact, note)


# -- race checks against their definitions ----------------------------------------------------


def _closure(ix: ProgramIndex) -> list[set[int]]:
    """Positions → positions of every transitive predecessor (the programs here are acyclic)."""
    assert ix.topo is not None
    before: list[set[int]] = [set() for _ in range(ix.n)]
    for pos in ix.topo:
        for p in ix.preds[pos]:
            before[pos] |= before[p] | {p}
    return before


def _cells(region: Region, shape: tuple[int, ...]) -> set[tuple[int, ...]]:
    boxes = region.boxes if region.boxes is not None else (tuple((0, d) for d in shape),)
    return {cell for box in boxes for cell in itertools.product(*(range(lo, hi) for lo, hi in box))}


@st.composite
def _mutated(draw: Any) -> MegakernelProgram:
    """Valid programs with some waits dropped, some tiles moved and some tasks turned into NOPs."""
    prog = draw(valid_programs(12, allocate_pages=False))
    for task in prog.tasks:
        how = draw(st.integers(0, 7))
        if how == 0 and task.waits:
            task.waits = task.waits[1:]
        elif how == 1:
            task.op = InstructionKind.NOP
        elif how == 2 and "n_off" in task.params:
            task.params = {**task.params, "n_off": draw(st.integers(0, 8))}
    return prog


def _diags(ix: ProgramIndex, codes: set[str], check: Any) -> Iterator[Any]:
    return (d for d in check(ix) if d.code in codes)


@given(_mutated())
def test_provenance_reports_exactly_the_unordered_reads(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    if not ix.acyclic:
        return
    before = _closure(ix)
    expected = set()
    for bid, readers in ix.readers.items():
        kind = ix.buffers[bid].kind
        writers = ix.writers.get(bid, [])
        if kind in READONLY_KINDS or not writers:
            continue
        for r in readers:
            if writers == [r]:
                continue  # R304's case
            read = ix.read_region(r, bid)
            bad = [
                w
                for w, region in zip(writers, ix.write_regions(bid), strict=True)
                if w != r and read.overlaps(region) and w not in before[r]
            ]
            if bad:
                expected.add((ix.task_id(r), bid, tuple(ix.task_ids(bad))))
    found = {
        (d.tasks[0], d.buffers[0], d.tasks[1:])
        for d in _diags(ProgramIndex(prog), {"R303", "R305"}, races.check_provenance)
    }
    assert found == expected


@given(_mutated())
def test_coverage_reports_exactly_the_buffers_with_unwritten_elements(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    expected = set()
    for bid, writers in ix.writers.items():
        buf = ix.buffers[bid]
        readers = ix.readers.get(bid, [])
        if buf.kind not in (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT) or (
            not readers and buf.kind is not BufferKind.IO_OUTPUT
        ):
            continue
        writes = ix.write_regions(bid)
        if any(w.boxes is None for w in writes):
            continue  # an unknown write may cover anything
        shape = tuple(buf.shape)
        targets = [(None, Region(None))] if buf.kind is BufferKind.IO_OUTPUT else []
        targets += [(r, ix.read_region(r, bid)) for r in readers]
        for reader, target in targets:
            others = [reg for w, reg in zip(writers, writes, strict=True) if w != reader]
            if reader in writers and all(o.is_empty for o in others):
                continue  # R304's case
            written = set().union(*(_cells(o, shape) for o in others))
            if _cells(target, shape) - written:
                expected.add(bid)
                break
    found = {d.buffers[0] for d in _diags(ProgramIndex(prog), {"R308"}, races.check_coverage)}
    assert found == expected
