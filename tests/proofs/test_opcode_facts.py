"""Facts about opcodes and flags that the checks read once instead of testing again (spec §3.1, §7.5).

``TaskColumns.plain_ops`` is tested once when the columns are built, and both the structure column
scan and the footprint batch read it. Here it equals its definition, "every opcode is exactly an
InstructionKind", on random, repeated and malformed programs (opcodes 5, None, an IntEnum), and the
footprint batch that reads it still gives each task its own footprint. The attention rule's
PARTIAL_WRITE bit is a plain int, and it selects the same flags as the IntFlag member.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from amkspec.ir import AttentionFlags, InstructionKind, MegakernelProgram
from amkspec.ir.opcodes import INT32_MAX, INT32_MIN
from amkspec.proofs.columns import task_columns
from amkspec.proofs.footprint import Memo, all_task_regions, task_regions
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.shapes import attention
from amkspec.strategies import valid_programs
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
