"""The rule keys built once per index serve the footprint batch and memory safety (spec §3.3, §7).

:attr:`~amkspec.proofs.index.ProgramIndex.rule_keys` (round 7) is one key per task, shared by the
footprint batch (:func:`~amkspec.footprint.all_task_regions` with ``rule_keys``) and the
memory-safety memo. Here, on random, repeated and malformed programs: the batch keyed that way
gives every task what :func:`task_regions` gives it on its own, the shared keys are the ones
memory safety would build itself, and the findings with them are those of checking every task.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import Memo, all_task_regions, task_regions
from amkspec.ir import MegakernelProgram
from amkspec.proofs.diagnostics import Diagnostic
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import check_memory_safety
from amkspec.proofs.rule_keys import operand_kinds, rule_keys
from amkspec.proofs.structure import check_structure
from tests.footprint.test_keyed_footprints import _as_tuples, _keyed_programs
from tests.proofs.test_column_fast_paths import repeated_tasks

_PROGRAMS = st.one_of(_keyed_programs(), repeated_tasks())
"""Malformed programs, and well-formed ones with repeated tasks (whose buffers give shared keys)."""


def _checked_index(prog: MegakernelProgram) -> ProgramIndex:
    ix = ProgramIndex(prog)
    list(check_structure(ix))  # sets buffers_well_formed, as in validate()
    return ix


def _rows(found: list[Diagnostic]) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, tuple(d.tasks), tuple(d.buffers)) for d in found]


@given(_PROGRAMS)
def test_the_rule_keyed_batch_equals_each_tasks_own_footprint(prog: MegakernelProgram) -> None:
    ix = _checked_index(prog)
    keys = ix.rule_keys
    if keys is None:  # no columns or a malformed buffer: the batch is keyed as before
        assert ix.columns is None or not ix.buffers_well_formed
        return
    assert ix.kinds == operand_kinds(ix.buffers)
    # the codes from the kinds are those of the column pass, code for code
    assert Memo().codes_of(ix.buffers, True, ix.kinds) == Memo().codes_of(ix.buffers)
    found = all_task_regions(
        ix.tasks, ix.inputs, ix.outputs, ix.buffers, Memo(), ix.columns, True, keys, ix.kinds
    )
    assert len(found) == ix.n
    for pos, task in enumerate(ix.tasks):
        if found[pos] is None:  # the batch raised: so does the task on its own
            with pytest.raises(Exception):  # noqa: B017 - whatever task_regions raises
                task_regions(task, ix.buffers, Memo())
            continue
        assert _as_tuples(found[pos]) == _as_tuples(task_regions(task, ix.buffers, Memo()))


@given(_PROGRAMS)
def test_the_shared_keys_are_memory_safetys_own(prog: MegakernelProgram) -> None:
    ix = _checked_index(prog)
    keys = ix.rule_keys
    if keys is not None:
        assert ix.columns is not None and ix.buffers_well_formed
        assert keys == rule_keys(ix.columns, 0, ix.n, operand_kinds(ix.buffers, True))
        assert keys == rule_keys(ix.columns, 0, ix.n, operand_kinds(ix.buffers))
    assert _rows(check_memory_safety(prog, ix, memo=True)) == _rows(check_memory_safety(prog, memo=False))
