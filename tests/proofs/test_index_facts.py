"""Facts the index and the buffer check record for later checks (spec §2, §1.3), against their
definitions: ``ProgramIndex.fields``, ``plain_inputs``/``plain_outputs``/``plain_waits``,
``lowest_threshold`` and ``buffers_well_formed``, and the fast paths that read them (the column
scan of the structure checks, the memory-safety buffer kinds, the weight bytes of the stats)."""

from __future__ import annotations

import copy
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import WEIGHT_KINDS, Buffer, BufferKind, DType, MegakernelProgram, Wait
from amkspec.ir.columns import task_columns
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.index import ProgramIndex, as_list
from amkspec.proofs.rule_keys import operand_kinds as _kinds
from amkspec.proofs.structure import (
    SIZE_EACH_BELOW,
    _scan_columns,
    _scan_each,
    buffer_nbytes,
    buffer_problem,
    check_structure,
    total_nbytes,
)
from tests.proofs.test_column_fast_paths import _gemv_tiles, mutated_programs
from tests.proofs.test_index import malformed_programs, runs_programs

programs = st.one_of(
    arbitrary_programs(), runs_programs(), malformed_programs(), mutated_programs(),
    valid_programs(max_tasks=10),
)


def _plain_refs(field: Any, known: dict[int, Any]) -> bool:
    return type(field) is list and all(type(b) is int and b in known for b in field)


def _plain_wait(w: Any) -> bool:
    return type(w) is Wait and type(w.counter) is int and type(w.threshold) is int


@given(programs)
def test_the_index_facts_hold_exactly_when_their_definitions_do(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    for got, name in zip(ix.fields, ("inputs", "outputs", "waits"), strict=True):
        assert len(got) == ix.n
        assert all(g is getattr(t, name, None) for g, t in zip(got, ix.tasks, strict=True))
    assert ix.plain_inputs == all(_plain_refs(getattr(t, "inputs", None), ix.buffers) for t in ix.tasks)
    assert ix.plain_outputs == all(_plain_refs(getattr(t, "outputs", None), ix.buffers) for t in ix.tasks)
    waits = [getattr(t, "waits", None) for t in ix.tasks]
    assert ix.plain_waits == all(type(ws) is list and all(map(_plain_wait, ws)) for ws in waits)
    thresholds = [t for table in ix.waits for _, _, t in table if type(t) is int]
    assert ix.lowest_threshold == min(thresholds, default=None)
    if ix.plain_waits:  # every wait is then in the tables, with its threshold
        assert [len(table) for table in ix.waits] == list(map(len, waits))
    assert not ix.buffers_well_formed  # only the structure checks set it


@given(programs)
def test_the_columns_read_from_the_index_are_the_columns_read_from_the_tasks(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    shared, own = ix.columns, task_columns(ix.tasks)
    assert (shared is None) == (own is None)
    if shared is not None and own is not None:
        assert shared == own
        for a, b in zip(shared[:5], own[:5], strict=True):
            assert all(x is y for x, y in zip(a, b, strict=True))


def _weights(ix: ProgramIndex) -> list[Any]:
    return [b for b in ix.buffers.values() if getattr(b, "kind", None) in WEIGHT_KINDS]


@st.composite
def odd_buffer_programs(draw: st.DrawFn) -> MegakernelProgram:
    """Programs with one buffer made malformed in a way an equality test would not see."""
    prog = draw(st.one_of(valid_programs(max_tasks=10), mutated_programs()))
    if prog.buffers and draw(st.booleans()):
        pos = draw(st.integers(0, len(prog.buffers) - 1))
        b = prog.buffers[pos]
        odd = draw(st.sampled_from([
            {"shape": (True, *b.shape[1:]) if b.shape else (True,)}, {"shape": list(b.shape)},
            {"shape": (*b.shape, 1, 1, 1, 1)}, {"shape": (-1,)}, {"shape": (2**31,)},
            {"kind": int(b.kind)}, {"dtype": int(b.dtype)}, {"space": None}, {"kind": BufferKind.CONST},
        ]))
        prog.buffers[pos] = copy.copy(b)
        for field, value in odd.items():
            object.__setattr__(prog.buffers[pos], field, value)
    return prog


@given(st.one_of(programs, odd_buffer_programs()))
def test_well_formed_buffers_are_recorded_only_when_every_buffer_is(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    check_structure(ix)
    buffers = as_list(prog.buffers)
    if ix.buffers_well_formed:
        assert all(buffer_problem(b) is None for b in buffers)
        records = dict(ix.buffers)
        assert _kinds(records, True) == _kinds(records)
    weights = _weights(ix)
    direct = sum(buffer_nbytes(b) or 0 for b in weights)
    assert total_nbytes(weights) == direct
    assert total_nbytes(weights, well_formed=ix.buffers_well_formed) == direct
    if ix.buffers_well_formed and weights:  # past SIZE_EACH_BELOW: each distinct (dtype, shape) once
        many = weights * (SIZE_EACH_BELOW // len(weights) + 1)
        assert len(many) >= SIZE_EACH_BELOW
        assert total_nbytes(many, well_formed=True) == sum(buffer_nbytes(b) or 0 for b in many)


@given(valid_programs(max_tasks=10))
def test_a_valid_program_has_plain_fields_and_well_formed_buffers(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    assert ix.plain_inputs and ix.plain_outputs and ix.plain_waits
    check_structure(ix)
    assert ix.buffers_well_formed


def test_a_repeated_input_is_plain_and_scanned_a_column_at_a_time() -> None:
    prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 140)
    for task in prog.tasks:
        task.inputs = [task.inputs[0], task.inputs[0]]  # x twice: a wrong shape, not a wrong reference
    ix = ProgramIndex(prog)
    assert ix.plain_inputs
    assert _scan_columns(ix) == _scan_each(ix)


def test_a_threshold_of_zero_or_past_int32_among_plain_waits_is_not_clean() -> None:
    for threshold in (0, -3, 2**31):
        prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 140)
        c = prog.tasks[0].out_counter
        for task in prog.tasks[1:]:
            task.waits = [Wait(c, 1)]
        prog.tasks[70].waits = [Wait(c, 1), Wait(c, threshold)]
        ix = ProgramIndex(prog)
        assert ix.plain_waits
        assert _scan_each(ix).unclean == [70]
        assert _scan_columns(ix) is None


def test_an_unknown_counter_among_plain_waits_or_a_missing_out_counter_is_not_clean() -> None:
    prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 140)
    prog.tasks[9].waits = [Wait(999, 1)]
    ix = ProgramIndex(prog)
    assert ix.plain_waits and _scan_each(ix).unclean == [9] and _scan_columns(ix) is None
    prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 140)
    prog.tasks[5].out_counter = None  # type: ignore[assignment]
    ix = ProgramIndex(prog)
    assert _scan_each(ix).unclean == [5] and _scan_columns(ix) is None


def test_stats_weigh_equal_buffers_once_with_the_bytes_of_each() -> None:
    validate_module = sys.modules["amkspec.proofs.validate"]
    prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 3)
    prog.buffers.append(Buffer(len(prog.buffers), "q", BufferKind.CONST, DType.I4, (3, 5)))  # 8 bytes
    ix = ProgramIndex(prog)
    check_structure(ix)
    assert ix.buffers_well_formed
    expected = 3 * 64 * 8 * 4 + 8
    assert total_nbytes(_weights(ix), well_formed=True) == expected
    assert validate_module._stats(ix)["weight_MB"] == round(expected / 1e6, 2)


class _SubWait(Wait):
    pass


_WAIT_FIELDS: list[tuple[Any, bool, int | None]] = [  # (the waits field, plain, lowest threshold)
    ([], True, None),
    ([Wait(0, 2)], True, 2),
    ([Wait(0, 3), Wait(1, 2)], True, 2),
    ([Wait(True, 1)], False, None),
    ([Wait(0, 1.0)], False, None),
    ([Wait(0, True)], False, None),
    ([Wait(0, 4), Wait(0, True)], False, 4),
    ([Wait(0, 4), Wait("a", 1)], False, 4),
    ([Wait(0, 4), None], False, 4),
    ((Wait(0, 1),), False, None),
    (None, False, None),
    ([_SubWait(0, 1)], False, None),
]


def test_plain_waits_and_the_lowest_threshold_of_each_kind_of_waits_field() -> None:
    for field, plain, lowest in _WAIT_FIELDS:
        for before in ([], [Wait(1, 5)]):  # alone, or after a task with a plain single wait
            prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 3)
            prog.tasks[1].waits = before
            prog.tasks[2].waits = field
            ix = ProgramIndex(prog)
            assert ix.plain_waits is plain, (field, before)
            low = min(lowest, 5) if before and lowest is not None else (5 if before else lowest)
            assert ix.lowest_threshold == low, (field, before)


def test_plain_operands_of_each_kind_of_operand_field() -> None:
    for field, plain in [([0, 0], True), ([0, 99], False), ([0, True], False), ((0,), False), ([], True),
                         ([0, 1, 0], True), (None, False), ([[0]], False)]:
        prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 2)
        prog.tasks[1].inputs = field
        prog.tasks[1].outputs = field
        ix = ProgramIndex(prog)
        assert ix.plain_inputs is plain and ix.plain_outputs is plain, field
