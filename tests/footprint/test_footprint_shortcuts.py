"""The round-6 shortcuts of the one footprint agree with the definitions they shortcut (spec §3.3).

* ``_broadcast`` of two shapes, one the trailing dims of the other, is :func:`_broadcast_axes`
  (the axis-by-axis rule), rejections included;
* ``_full`` of one or two inputs is "every element of the first ``used`` inputs, nothing of the
  rest";
* the batch's flat key of a task with two inputs and one output never stands for a task of
  other arities;
* ``_own_operands`` of a list of two ids is its list definition;
* :func:`region_of` of a buffer named once or never is the union of the regions at the positions
  that name it;
* :meth:`Memo.codes_of` told that the buffers are well formed (the index's
  ``buffers_well_formed``, set by the structure checks) gives the codes it finds by checking them,
  and the validator's batch then gives every task its own :func:`task_regions`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from amkspec.footprint import (
    EMPTY,
    KEYED_MIN_TASKS,
    Memo,
    Operand,
    Region,
    region_of,
    task_regions,
    union,
    whole,
)
from amkspec.footprint.fast import _own_operands
from amkspec.footprint.reference import operands_of
from amkspec.footprint.rules import _broadcast, _broadcast_axes, _full, _Reject
from amkspec.ir import Buffer, BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import structure
from amkspec.proofs.index import ProgramIndex
from tests.proofs.test_column_fast_paths import mutated_programs

_DIMS = st.integers(0, 4)
_SHAPES = st.lists(_DIMS, max_size=4).map(tuple)


def _broadcast_or_reject(fn: Any, shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...] | str:
    try:
        return tuple(fn(shapes))
    except _Reject as exc:
        return f"reject: {exc}"


@st.composite
def _shape_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes, often one the trailing dims of the other (the shortcut), sometimes not."""
    long = draw(_SHAPES)
    how = draw(st.integers(0, 3))
    if how == 0:
        short = long[draw(st.integers(0, len(long))) :]
    elif how == 1:  # a trailing slice with one dim changed (1 or another size)
        short = list(long[draw(st.integers(0, len(long))) :])
        if short:
            short[draw(st.integers(0, len(short) - 1))] = draw(_DIMS)
        short = tuple(short)
    else:
        short = draw(_SHAPES)
    return (long, short) if draw(st.booleans()) else (short, long)


@given(_shape_pairs())
def test_broadcast_of_two_shapes_is_the_axis_rule(pair: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    expected = _broadcast_or_reject(_broadcast_axes, pair)
    assert _broadcast_or_reject(lambda s: _broadcast(*s), pair) == expected


@given(st.lists(_SHAPES, max_size=4))
def test_broadcast_of_any_shapes_is_the_axis_rule(shapes: list[tuple[int, ...]]) -> None:
    expected = _broadcast_or_reject(_broadcast_axes, tuple(shapes))
    assert _broadcast_or_reject(lambda s: _broadcast(*s), tuple(shapes)) == expected


def test_the_trailing_dims_shortcut_is_taken_and_is_the_axis_rule() -> None:
    for long, short in [((1, 64), (64,)), ((3, 1, 5), (1, 5)), ((2, 0), (0,)), ((4,), ())]:
        assert _broadcast(long, short) is long and _broadcast(short, long) is long
        assert _broadcast_axes((long, short)) == long == _broadcast_axes((short, long))


@given(st.lists(_SHAPES, max_size=5), st.integers(0, 6))
def test_full_is_every_element_of_the_used_inputs(shapes: list[tuple[int, ...]], used: int) -> None:
    ins = [Operand.scratch(s) for s in shapes]
    assert _full(ins, used) == [whole(op.stored) if i < used else EMPTY for i, op in enumerate(ins)]


_REGIONS = st.sampled_from(
    [
        EMPTY,
        Region(None, exact=False, note="unknown"),
        Region((((0, 2),),)),
        Region((((1, 3),),)),
        Region((((0, 2),), ((0, 2),))),
        Region((((2, 4),),), exact=False, note="over"),
    ]
)


def _region_of_definition(ids: list[Any], regions: list[Region], buffer: Any) -> Region:
    found = [r for b, r in zip(ids, regions, strict=True) if b == buffer]
    return EMPTY if not found else found[0] if len(found) == 1 else union(found)


@given(st.data())
def test_region_of_is_the_union_of_the_positions_naming_the_buffer(data: st.DataObject) -> None:
    ids = data.draw(st.lists(st.sampled_from([0, 1, 2, 3, True, 1.0]), max_size=5))
    regions = data.draw(st.lists(_REGIONS, min_size=len(ids), max_size=len(ids)))
    as_tuple = data.draw(st.booleans())
    for buffer in (0, 1, 2, 3, 4, True):
        expected = _region_of_definition(ids, regions, buffer)
        assert region_of(tuple(ids) if as_tuple else ids, regions, buffer) == expected


def test_region_of_a_buffer_named_once_is_its_region_itself() -> None:
    first, second = Region((((0, 2),),)), Region((((2, 4),),))
    assert region_of([5, 7], [first, second], 7) is second
    assert region_of((5,), [first], 5) is first
    assert region_of([5, 7], [first, second], 6) is EMPTY
    assert region_of([7, 7], [first, second], 7) == Region((((0, 2),), ((2, 4),)))


def _well_formed_index(prog: MegakernelProgram) -> ProgramIndex:
    ix = ProgramIndex(prog)
    list(structure.check_buffers(ix))  # sets buffers_well_formed when every record is well formed
    return ix


@given(st.one_of(valid_programs(), arbitrary_programs(), mutated_programs()))
def test_codes_of_well_formed_buffers_are_the_checked_codes(prog: MegakernelProgram) -> None:
    ix = _well_formed_index(prog)
    checked = Memo()
    expected = dict(checked.codes_of(ix.buffers))
    if not ix.buffers_well_formed:
        return
    trusted = Memo()
    assert trusted.codes_of(ix.buffers, well_formed=True) == expected
    assert [(o.stored, o.uint8, o.logical) for o in trusted.operands] == [
        (o.stored, o.uint8, o.logical) for o in checked.operands
    ]
    assert trusted.packed == checked.packed


@given(st.one_of(valid_programs(), arbitrary_programs(), mutated_programs()))
def test_the_index_batch_on_well_formed_buffers_is_each_tasks_own(prog: MegakernelProgram) -> None:
    ix = _well_formed_index(prog)
    for pos in range(ix.n):
        batch = ix.regions(pos)
        try:
            own = task_regions(ix.tasks[pos], ix.buffers, Memo())
        except Exception:  # noqa: BLE001 - a record the batch also could not judge
            continue
        assert (tuple(batch[0]), batch[1], tuple(batch[2]), batch[3]) == (
            tuple(own[0]),
            own[1],
            tuple(own[2]),
            own[3],
        )


@pytest.mark.parametrize("well_formed", [False, True])
def test_codes_of_interns_equal_operands_once(well_formed: bool) -> None:
    buffers = {
        i: Buffer(id=i, name=f"b{i}", shape=shape, dtype=dtype, kind=BufferKind.ACTIVATION)
        for i, (shape, dtype) in enumerate(
            [((2, 4), DType.F32), ((2, 4), DType.F32), ((2, 4), DType.I4), ((3,), DType.BF16)]
        )
    }
    memo = Memo()
    codes = memo.codes_of(buffers, well_formed)
    assert codes[0] == codes[1] != codes[2]
    assert memo.operands[codes[2]].stored == (2, 2) and memo.operands[codes[2]].logical == (2, 4)
    assert memo.packed == {codes[2]}


@pytest.mark.parametrize("copies", [1, KEYED_MIN_TASKS])
def test_tasks_of_one_op_and_params_but_other_arities_keep_their_own_regions(copies: int) -> None:
    """The batch keys a task of two inputs and one output by a flat five-item key; tasks of other
    arities with equal opcode, params and codes (ADD of 1, 2 or 3 inputs into 1 or 2 outputs)
    keep their own regions, with and without the index's columns."""
    b = ProgramBuilder()
    a = b.new_buffer("a", BufferKind.IO_INPUT, DType.F32, (2, 4))
    c = b.new_buffer("c", BufferKind.IO_INPUT, DType.F32, (4,))  # broadcast: other regions
    arities = [([a, c], 1), ([a], 2), ([a, c, a], 1), ([a, c], 2), ([c, a], 1), ([a, a], 1)]
    for i in range(copies):
        ins, n_out = arities[i % len(arities)]
        outs = [b.new_buffer(f"y{i}_{j}", BufferKind.IO_OUTPUT, DType.F32, (2, 4)) for j in range(n_out)]
        b.add_task(InstructionKind.ADD, ins, outs, params={"k": 1}, label=f"t{i}")
    if copies == 1:  # every arity once, below the columns' threshold
        for i, (ins, n_out) in enumerate(arities[1:], start=1):
            outs = [b.new_buffer(f"z{i}_{j}", BufferKind.IO_OUTPUT, DType.F32, (2, 4)) for j in range(n_out)]
            b.add_task(InstructionKind.ADD, ins, outs, params={"k": 1}, label=f"u{i}")
    ix = ProgramIndex(b.build())
    assert (ix.n >= KEYED_MIN_TASKS) == (copies > 1)
    for pos, task in enumerate(ix.tasks):
        batch, own = ix.regions(pos), task_regions(task, ix.buffers, Memo())
        assert (tuple(batch[0]), batch[1], tuple(batch[2]), batch[3]) == (
            tuple(own[0]),
            own[1],
            tuple(own[2]),
            own[3],
        )
    assert any(len(key) == 5 for key in ix._memo.ops) and any(len(key) == 4 for key in ix._memo.ops)


@given(st.lists(st.sampled_from([0, 1, 2, 5, True, 1.0, None, "1", -1]), max_size=4), st.booleans())
@example([0, True], False)
@example([1.0, 2], False)
@example([2, 5], False)
@example([2, 2], True)
def test_own_operands_of_two_ids_is_the_list_definition(value: list[Any], as_tuple: bool) -> None:
    """``_own_operands`` (a task's own operand list, each id's code from the filled table): a list
    of exact ints gives its ids and their codes (None for an id that is not a buffer's), anything
    else what :func:`~amkspec.footprint.reference.operands_of` gives; the two-id shortcut agrees."""
    buffers = {
        i: Buffer(id=i, name=f"b{i}", shape=(i + 1, 2), dtype=DType.F32, kind=BufferKind.ACTIVATION)
        for i in range(3)
    }
    memo = Memo()
    code = memo.codes_of(buffers)
    given_value: Any = tuple(value) if as_tuple else value
    if type(given_value) is list and all(type(b) is int for b in given_value):
        expected: Any = (tuple(given_value), tuple(code.get(b) for b in given_value))
    else:
        expected = operands_of(given_value, buffers, memo)
    assert _own_operands(given_value, code, buffers, memo) == expected
