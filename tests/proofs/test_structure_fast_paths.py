"""The whole-program fast paths of the structure and memory-safety families change no finding
(spec §1.3, §3.1, §7): the task scan's flags, the column test of the buffers, the buffer kinds
of the rule memo and the index's buffer table each agree with the per-record checks."""

from __future__ import annotations

import itertools

import attrs
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import TARGETS, BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.ir.shapes import are_shapes, is_shape
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import _records, check_memory_safety
from amkspec.proofs.rule_keys import operand_kinds as _kinds
from amkspec.proofs.shapes.context import operand_kind
from amkspec.proofs.structure import (
    _all_fine,
    buffer_cap,
    buffer_nbytes,
    buffer_problem,
    check_buffers,
    check_ids,
    check_sm,
    check_structure,
    check_task,
    scan_tasks,
)

programs = st.one_of(arbitrary_programs(), valid_programs())


def _rows(found: object) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in found]  # type: ignore[attr-defined]


@given(programs)
def test_the_scan_flags_agree_with_the_id_and_sm_checks(prog: MegakernelProgram) -> None:
    scan = scan_tasks(ProgramIndex(prog))
    everything = _rows(check_ids(ProgramIndex(prog)))
    assert _rows(check_ids(ProgramIndex(prog), tasks_in_place=scan.ids_in_place)) == everything
    if scan.sms_in_range:
        assert list(check_sm(ProgramIndex(prog))) == []


@given(programs)
def test_the_buffer_column_test_implies_every_buffer_is_fine(prog: MegakernelProgram) -> None:
    buffers = prog.buffers if isinstance(prog.buffers, list) else []
    cap, _ = buffer_cap(prog)
    if _all_fine(buffers, cap):
        assert all(buffer_problem(b) is None for b in buffers)
        assert all((buffer_nbytes(b) or 0) <= cap for b in buffers)
    if all(buffer_problem(b) is None for b in buffers) and isinstance(prog.buffers, list):
        assert _all_fine(buffers, 1 << 62)


def _two_buffers(nbytes_cap: int) -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 64))  # 256 bytes
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 64))
    b.add_task(InstructionKind.COPY, [x], [y])
    return b.build(target=attrs.evolve(TARGETS["h100"], hbm_bytes=nbytes_cap))


def test_buffers_that_fit_one_by_one_but_not_together_are_fine() -> None:
    prog = _two_buffers(300)  # 512 bytes in all, 256 each
    assert not _all_fine(prog.buffers, 300)
    assert list(check_buffers(ProgramIndex(prog))) == []
    codes = [d.code for d in check_buffers(ProgramIndex(_two_buffers(200)))]
    assert codes == ["S117", "S117"]


@given(programs)
def test_the_buffer_kinds_partition_the_buffers_by_operand_kind(prog: MegakernelProgram) -> None:
    records = _records(prog.buffers)
    kinds = _kinds(records)
    usable = {bid for bid, buf in records.items() if operand_kind(buf) is not None}
    assert set(kinds) == usable
    for a, b in itertools.combinations(sorted(usable), 2):
        same_kind = operand_kind(records[a]) == operand_kind(records[b])
        assert (kinds[a] == kinds[b]) == same_kind


@given(programs, st.booleans())
def test_memory_safety_with_and_without_the_index_agree(prog: MegakernelProgram, memo: bool) -> None:
    ix = ProgramIndex(prog)
    check_structure(ix)
    with_index = check_memory_safety(prog, ix, memo=memo)
    alone = check_memory_safety(prog, memo=memo)
    assert [(d.code, d.message, d.tasks, d.buffers) for d in with_index] == [
        (d.code, d.message, d.tasks, d.buffers) for d in alone
    ]


def _corrupted() -> list[MegakernelProgram]:
    """A valid two-task program, then copies with one field set to a value that equals a valid one
    but is not an int (``True == 1``, ``1.0 == 1``), or with a record that is not a Buffer."""
    def build() -> MegakernelProgram:
        b = ProgramBuilder()
        x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 64))
        h = b.new_buffer("h", BufferKind.ACTIVATION, DType.F32, (1, 64))
        y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 64))
        first = b.add_task(InstructionKind.COPY, [x], [h])
        b.add_task(InstructionKind.COPY, [h], [y], waits=[b.after(first)])
        prog = b.build(target=TARGETS["h100"])
        prog.tasks[0].sm, prog.tasks[1].sm = 0, 1
        return prog

    out = [build() for _ in range(6)]
    out[1].tasks[1].id = True
    out[2].tasks[1].sm = True
    out[3].tasks[0].sm = 1.0
    out[4].tasks[1].waits[0] = attrs.evolve(out[4].tasks[1].waits[0], threshold=True)
    out[5].buffers.insert(0, Junk(1))  # type: ignore[arg-type]  # ix.buffers[1] is not a Buffer
    return out


@attrs.define
class Junk:
    id: int


def test_values_equal_to_ints_but_not_ints_are_caught() -> None:
    progs = _corrupted()
    clean, bool_id, bool_sm, float_sm, bool_threshold, _ = (scan_tasks(ProgramIndex(p)) for p in progs)
    assert clean == ([], True, True)
    assert not bool_id.ids_in_place
    assert [d.code for d in check_ids(ProgramIndex(progs[1]))] == ["S102"]
    assert not bool_sm.sms_in_range and not float_sm.sms_in_range
    assert [d.code for d in check_sm(ProgramIndex(progs[2]))] == ["S113"]
    assert bool_threshold.unclean == [1]
    assert [d.code for d in check_task(ProgramIndex(progs[4]), 1)] == ["S108"]


def test_memory_safety_ignores_an_index_whose_buffer_table_holds_other_records() -> None:
    prog = _corrupted()[5]
    ix = ProgramIndex(prog)
    assert isinstance(ix.buffers[1], Junk)
    for memo in (True, False):
        assert _rows(check_memory_safety(prog, ix, memo=memo)) == _rows(check_memory_safety(prog, memo=memo))


_DIMS = st.one_of(st.integers(-2, 5), st.booleans(), st.floats(0, 3))


_SHAPES = st.one_of(st.tuples(_DIMS, _DIMS), st.tuples(st.integers(0, 9)), st.lists(st.integers(0, 3)))


@given(st.lists(_SHAPES))
def test_are_shapes_is_is_shape_of_every_entry(shapes: list[object]) -> None:
    exact = all(type(s) is tuple and all(type(d) is int and d >= 0 for d in s) for s in shapes)
    assert are_shapes(shapes) == exact
    if are_shapes(shapes):
        assert all(is_shape(s) for s in shapes)
