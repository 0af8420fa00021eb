"""Memory safety trusts what the structure checks proved (spec §3.1, §3.4): with
``ProgramIndex.buffers_well_formed`` a buffer's operand is built without testing its shape
again, and with ``tasks_well_formed`` a task's op application without testing its fields again
(``memory._plain_context``); both must be exactly what the plain definitions give."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.programs.strategies import valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import _context, _plain_context, check_memory_safety
from amkspec.proofs.shapes.context import Operand, buffer_operand
from amkspec.proofs.structure import _scan_each, check_structure
from tests.proofs.test_column_fast_paths import programs


def _view(operand: Operand | None) -> Any:
    if operand is None:
        return None
    o = operand
    return (o.name, o.shape, o.dtype, o.buffer, o.rank, o.numel, o.rows)


def _rows(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.tasks, d.buffers, d.severity) for d in found]


any_programs = st.one_of(programs, valid_programs())


@given(any_programs)
def test_the_structure_facts_hold_as_stated(prog: Any) -> None:
    ix = ProgramIndex(prog)
    check_structure(ix)
    assert ix.tasks_well_formed == (not _scan_each(ix).unclean)
    if ix.buffers_well_formed:
        for buf in ix.buffers.values():
            assert _view(buffer_operand(buf, True)) == _view(buffer_operand(buf)) is not None
    if ix.tasks_well_formed and ix.buffers_well_formed:
        operands = {bid: buffer_operand(buf) for bid, buf in ix.buffers.items()}
        for task in ix.tasks:
            plain, ctx = _plain_context(task, operands.get, []), _context(task, operands.get, [])
            assert ctx is not None
            assert (plain.task, plain.op, plain.params) == (ctx.task, ctx.op, ctx.params)
            assert plain.inputs == ctx.inputs and plain.outputs == ctx.outputs  # the same Operand objects


@given(any_programs, st.booleans())
def test_memory_safety_with_the_structure_facts_finds_what_it_finds_without(prog: Any, memo: bool) -> None:
    plain = _rows(check_memory_safety(prog, memo=False))
    ix = ProgramIndex(prog)
    check_structure(ix)
    assert _rows(check_memory_safety(prog, ix, memo=memo)) == plain
