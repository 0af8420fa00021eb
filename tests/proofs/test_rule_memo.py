"""The memo of the memory-safety rules and of the structure param check changes no finding (spec §3.1, §7).

Memory safety runs an opcode's shape rules once per rule key (``memory._check_memoised``)
and skips later tasks with the key of a clean one; ``memo=False`` runs the same rules on
every task, so the two must agree on every program.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Task
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import check_memory_safety
from amkspec.proofs.structure import check_task, scan_tasks

Op = InstructionKind
F32 = DType.F32


def _gemv_pair(first: dict[str, Any], second: dict[str, Any], w2_dtype: DType = F32) -> MegakernelProgram:
    """Two GEMV tiles over buffers of equal shapes (one rule key unless params or dtypes differ)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 8))
    w1 = b.new_buffer("w1", BufferKind.WEIGHT, F32, (64, 8))
    w2 = b.new_buffer("w2", BufferKind.WEIGHT, w2_dtype, (64, 8))
    y1 = b.new_buffer("y1", BufferKind.IO_OUTPUT, F32, (1, 64))
    y2 = b.new_buffer("y2", BufferKind.IO_OUTPUT, F32, (1, 64))
    b.add_task(Op.GEMV_TILE, [x, w1], [y1], params=first, label="first")
    b.add_task(Op.GEMV_TILE, [x, w2], [y2], params=second, label="second")
    return b.build()


def _both(prog: MegakernelProgram) -> list[tuple[str, str]]:
    memo = [(d.code, d.message) for d in check_memory_safety(prog, memo=True)]
    assert memo == [(d.code, d.message) for d in check_memory_safety(prog, memo=False)]
    return memo


def test_a_bool_or_float_param_equal_to_an_int_is_not_the_same_key() -> None:
    # n_off=True / 1.0 is not an int32: the tile rule is off and the first task is clean; n_off=1
    # is, and its tile [1, 65) leaves the output. True == 1 == 1.0, so only the key's types tell.
    for odd in (True, 1.0):
        found = _both(_gemv_pair({"N_tile": 64, "n_off": odd}, {"N_tile": 64, "n_off": 1}))
        assert found == [("M401", "task 1:second writes columns [1, 65) of buffer 4:y2 whose last dim is 64")]


def test_a_different_weight_dtype_is_not_the_same_key() -> None:
    found = _both(_gemv_pair({"N_tile": 64}, {"N_tile": 64}, w2_dtype=DType.I8))
    assert [code for code, _ in found] == ["M412"]
    assert "task 1:second" in found[0][1] and "buffer 2:w2" in found[0][1]


def test_every_task_with_a_failing_key_is_reported_under_its_own_name() -> None:
    found = _both(_gemv_pair({"N_tile": 64, "n_off": 8}, {"N_tile": 64, "n_off": 8}))
    assert [m for _, m in found] == [
        "task 0:first writes columns [8, 72) of buffer 3:y1 whose last dim is 64",
        "task 1:second writes columns [8, 72) of buffer 4:y2 whose last dim is 64",
    ]


def test_kv_append_in_place_or_not_is_not_the_same_key() -> None:
    b = ProgramBuilder()
    new = b.new_buffer("new", BufferKind.ACTIVATION, F32, (1, 2, 4))
    k1 = b.new_buffer("k1", BufferKind.KV_CACHE, F32, (16, 2, 4))
    k2 = b.new_buffer("k2", BufferKind.KV_CACHE, F32, (16, 2, 4))
    b.add_task(Op.KV_APPEND, [new, k1], [k1], params={"pos": 3}, label="in_place")
    b.add_task(Op.KV_APPEND, [new, k1], [k2], params={"pos": 3}, label="elsewhere")
    found = _both(b.build())
    assert [code for code, _ in found] == ["M441"]
    assert found[0][1].startswith("task 1:elsewhere")


_PARAM_VALUES = st.sampled_from([0, 1, 4, 8, 16, 64, -1, True, False, 1.0, 8.0, 2**40, "x", None])


@st.composite
def repeated_tasks(draw: st.DrawFn) -> MegakernelProgram:
    """A program whose tasks repeat earlier ones on other buffers of the same or another shape,
    with a param or a buffer dtype changed now and then: many tasks share a rule key."""
    prog = draw(valid_programs(max_tasks=8))
    tasks: list[Task] = list(prog.tasks)
    n_buffers = len(prog.buffers)
    for _ in range(draw(st.integers(0, 12))):
        task = copy.deepcopy(draw(st.sampled_from(tasks)))
        task.id = len(tasks)
        if n_buffers and draw(st.booleans()):
            ops = task.inputs if draw(st.booleans()) or not task.outputs else task.outputs
            if ops:
                ops[draw(st.integers(0, len(ops) - 1))] = draw(st.integers(0, n_buffers - 1))
        if task.params and draw(st.booleans()) and not isinstance(task.params.get("recipe"), dict):
            task.params[draw(st.sampled_from(sorted(task.params)))] = draw(_PARAM_VALUES)
        tasks.append(task)
    if n_buffers and draw(st.booleans()):
        buf = prog.buffers[draw(st.integers(0, n_buffers - 1))]
        buf.dtype = draw(st.sampled_from(list(DType)))
    prog.tasks = tasks
    return prog


@given(st.one_of(repeated_tasks(), arbitrary_programs()))
def test_memoised_and_unmemoised_memory_checks_agree(prog: MegakernelProgram) -> None:
    memo = check_memory_safety(prog, memo=True)
    plain = check_memory_safety(prog, memo=False)
    assert [(d.code, d.message, d.tasks, d.buffers) for d in memo] == [
        (d.code, d.message, d.tasks, d.buffers) for d in plain
    ]


@given(st.one_of(repeated_tasks(), arbitrary_programs()))
def test_the_task_fast_path_agrees_with_the_detailed_check_on_repeated_tasks(
    prog: MegakernelProgram,
) -> None:
    ix = ProgramIndex(prog)
    unclean = set(scan_tasks(ix).unclean)
    for pos in range(ix.n):
        assert (pos not in unclean) == (list(check_task(ix, pos)) == [])
