"""Facts the checks read once instead of testing again, and a loop fast path (spec §1.3, §3.1, §7.5).

``TaskColumns.plain_ops`` is tested once when the columns are built, and both the structure column
scan and the footprint batch read it. Here it equals its definition, "every opcode is exactly an
InstructionKind", on random, repeated and malformed programs (opcodes 5, None, an IntEnum), and the
footprint batch that reads it still gives each task its own footprint. The attention rule's
PARTIAL_WRITE bit is a plain int, and it selects the same flags as the IntFlag member. The buffer
fast path of ``check_buffers`` answers True only when every buffer is fine and fits, with a
malformed record at any position.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from amkspec.footprint import Memo, all_task_regions, task_regions
from amkspec.ir import AttentionFlags, Buffer, DType, InstructionKind, MegakernelProgram
from amkspec.ir.columns import task_columns
from amkspec.ir.opcodes import INT32_MAX, INT32_MIN
from amkspec.programs.strategies import valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.shapes import attention
from amkspec.proofs.shapes.context import buffer_operand, is_integer_dtype, operand_kind
from amkspec.proofs.structure import _all_fine, buffer_nbytes, buffer_problem
from tests.proofs.test_column_fast_paths import programs
from tests.proofs.test_rule_memo import repeated_tasks


def _as_tuples(found: Any) -> Any:
    ids_in, reads, ids_out, writes = found
    return list(ids_in), reads, list(ids_out), writes


@given(programs)
def test_plain_ops_is_every_opcode_exactly_an_instruction_kind(prog: MegakernelProgram) -> None:
    columns = task_columns(prog.tasks if isinstance(prog.tasks, list) else [])
    if columns is None:
        return
    assert columns.plain_ops is all(type(op) is InstructionKind for op in columns.ops)


@given(st.one_of(programs, repeated_tasks()))
def test_the_batch_reading_plain_ops_gives_each_task_its_own_footprint(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    columns = task_columns(ix.tasks)
    found = all_task_regions(ix.tasks, ix.inputs, ix.outputs, ix.buffers, Memo(), columns)
    for pos, task in enumerate(ix.tasks):
        if found[pos] is None:  # left to task_regions, where the error belongs
            continue
        assert _as_tuples(found[pos]) == _as_tuples(task_regions(task, ix.buffers, Memo()))


@given(valid_programs(), st.sampled_from([5, None, "MATMUL"]), st.data())
def test_an_odd_opcode_clears_plain_ops(prog: MegakernelProgram, odd: Any, data: st.DataObject) -> None:
    assume(prog.tasks)
    columns = task_columns(prog.tasks)
    assert columns is not None and columns.plain_ops
    prog.tasks[data.draw(st.integers(0, len(prog.tasks) - 1))].op = odd
    columns = task_columns(prog.tasks)
    assert columns is not None and not columns.plain_ops


@given(st.integers(INT32_MIN, INT32_MAX))
def test_the_partial_write_bit_selects_the_flags_the_int_flag_does(flags: int) -> None:
    assert bool(flags & attention._PARTIAL_WRITE) is bool(flags & AttentionFlags.PARTIAL_WRITE)


class _Label(str):
    def __format__(self, spec: str) -> str:
        return "formatted"


_ODD_FIELDS = {
    "kind": [None, 1, "ACTIVATION"],
    "dtype": [None, 2, "F32"],
    "space": [None, 0],
    "shape": [(-1,), (True, 2), (2**31,), (1, 1, 1, 1, 1), [4, 4], (1.0,), None, ("4",)],
    "name": [None, 3, _Label("odd")],
    "id": [True, "x", None, 2**40],
}


@st.composite
def buffer_lists(draw: st.DrawFn) -> list[Any]:
    """The buffers of a valid program, with zero to three broken at any position (a field set to
    an odd value, or the record replaced by a dict)."""
    buffers: list[Any] = list(draw(valid_programs()).buffers)
    for _ in range(draw(st.integers(0, 3)) if buffers else 0):
        pos = draw(st.integers(0, len(buffers) - 1))
        field = draw(st.sampled_from([*_ODD_FIELDS, "record"]))
        if field == "record":
            buffers[pos] = {"id": pos}
        elif isinstance(buffers[pos], Buffer):
            odd = copy.copy(buffers[pos])
            object.__setattr__(odd, field, draw(st.sampled_from(_ODD_FIELDS[field])))  # past the converters
            buffers[pos] = odd
    return buffers


@given(buffer_lists(), st.integers(0, 1 << 40))
def test_the_buffer_fast_path_is_true_only_when_every_buffer_is_fine(buffers: list[Any], cap: int) -> None:
    fine = all(buffer_problem(b) is None for b in buffers)
    if _all_fine(buffers, cap):
        assert fine and all((buffer_nbytes(b) or 0) <= cap for b in buffers)
    # every buffer fine (a list shape is fine, but sends check_buffers to the per-buffer path):
    # the bound by the bytes of all of them decides
    if fine and all(type(b.shape) is tuple for b in buffers):
        assert _all_fine(buffers, 1 << 62)
        assert not _all_fine(buffers, -1)


@given(buffer_lists())
def test_a_buffer_operand_is_its_kind_named_for_messages(buffers: list[Any]) -> None:
    for buf in buffers:
        if not isinstance(buf, Buffer):
            continue
        kind, operand = operand_kind(buf), buffer_operand(buf)
        if kind is None:
            assert operand is None
            continue
        assert operand is not None and (operand.shape, operand.dtype) == kind
        label = buf.name if isinstance(buf.name, str) else "?"
        assert operand.name == "buffer " + format(buf.id) + ":" + format(label)
        assert operand.buffer == (buf.id if type(buf.id) is int else None)
        if buffer_problem(buf) is None:
            trusted = buffer_operand(buf, well_formed=True)
            assert trusted is not None
            assert (trusted.name, trusted.shape, trusted.dtype, trusted.buffer) == (
                operand.name,
                operand.shape,
                operand.dtype,
                operand.buffer,
            )


def test_is_integer_dtype_is_the_dtypes_own_property() -> None:
    assert is_integer_dtype(None) is None
    for dtype in DType:
        assert is_integer_dtype(dtype) is dtype.is_integer
