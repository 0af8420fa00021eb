"""What bounds the validator's memory on long task lists changes no finding (spec §3.4, §7):
``columns.task_columns`` shares one bytes object among equal params keys, and the
memory-safety memo (``memory._check_memoised``) keys tasks, names buffer kinds and
records clean keys block by block."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import MegakernelProgram, Task
from amkspec.ir.columns import param_key, task_columns
from amkspec.proofs import memory
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import check_memory_safety
from amkspec.proofs.rule_keys import operand_kinds, rule_keys
from amkspec.proofs.structure import check_structure
from tests.proofs.test_column_fast_paths import programs


def _rows(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.tasks, d.buffers) for d in found]


@given(programs, st.integers(1, 7))
def test_memo_blocks_of_any_size_change_no_finding(prog: MegakernelProgram, size: int) -> None:
    plain = _rows(check_memory_safety(prog, memo=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "RULE_KEYS_AT_ONCE", size)
        assert _rows(check_memory_safety(prog, memo=True)) == plain
        ix = ProgramIndex(prog)
        check_structure(ix)
        assert _rows(check_memory_safety(prog, ix, memo=True)) == plain


@given(programs, st.integers(1, 7))
def test_a_block_keys_its_own_tasks(prog: MegakernelProgram, size: int) -> None:
    ix = ProgramIndex(prog)
    columns = ix.columns
    kinds = operand_kinds(ix.buffers) if {*map(type, ix.buffers.values())} <= {memory.Buffer} else {}
    whole = rule_keys(columns, 0, ix.n, kinds)
    for start in range(0, ix.n, size):
        n = min(size, ix.n - start)
        block = rule_keys(columns, start, n, kinds)
        assert len(block) == n
        # keys are equal exactly where the whole list's are: a block's slots may be fewer
        for i in range(n):
            for j in range(n):
                if whole[start + i] is not None and whole[start + j] is not None:
                    assert (block[i] == block[j]) == (whole[start + i] == whole[start + j])
            assert (block[i] is None) == (whole[start + i] is None) or whole[start + i] is None


@given(programs)
def test_equal_params_keys_are_one_object(prog: MegakernelProgram) -> None:
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    columns = task_columns(tasks)
    if columns is None:
        assert not {*map(type, tasks)} <= {Task}
        return
    assert columns.param_keys == [param_key(t.params) for t in tasks]
    assert columns.all_keyed == (None not in columns.param_keys)
    by_value: dict[bytes | None, bytes | None] = {}
    for key in columns.param_keys:
        assert by_value.setdefault(key, key) is key
