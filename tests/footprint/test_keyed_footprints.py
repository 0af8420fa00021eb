"""The footprint batch keyed by the shared params keys is the one footprint (spec §3.3, round 4).

From :data:`~amkspec.footprint.KEYED_MIN_TASKS` tasks on, the validator's batch
(:func:`~amkspec.footprint.all_task_regions` with the index's columns) keys each task by
``(opcode, params key, input codes, output codes)``, the params key being the exact
:func:`~amkspec.ir.columns.param_key`. Here every task of random, repeated and malformed
programs gets from that batch what :func:`op_footprint` gives it on its own, and two tasks share a
key only where their params are identical: the same types and values, floats by their bits. So two
NaN params of the same bits share a key (their footprints cannot differ), where the old
``params.items()`` key, which compares NaN by object identity, kept two NaN objects apart.
"""

from __future__ import annotations

import math
import struct
import types
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import (
    KEYED_MIN_TASKS,
    Memo,
    Operand,
    TaskRegions,
    all_task_regions,
    op_footprint,
    task_regions,
)
from amkspec.footprint.reference import _logical
from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Task
from amkspec.ir.columns import param_key, task_columns
from amkspec.programs.strategies import arbitrary_programs
from amkspec.proofs.index import ProgramIndex
from tests.proofs.test_column_fast_paths import mutated_programs


class Flag(IntEnum):
    EIGHT = 8


class Count(int):
    pass


_VALUES = [8, 8.0, True, 1, 1.0, 0, -0.0, 0.0, Flag.EIGHT, Count(8), math.nan, math.inf, 2**40, "8", None]
_VALUES.append([8])  # unhashable: the items key of the unkeyed batch raises


@st.composite
def _keyed_programs(draw: st.DrawFn) -> MegakernelProgram:
    """Programs (repeated tasks, broken fields) with params and operands the keys must tell apart."""
    prog = draw(st.one_of(mutated_programs(), arbitrary_programs()))
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    for task in tasks:
        if not isinstance(task, Task):
            continue
        how = draw(st.integers(0, 9))
        if how == 0 and isinstance(task.params, dict) and task.params:
            task.params[draw(st.sampled_from(sorted(task.params)))] = draw(st.sampled_from(_VALUES))
        elif how == 1 and isinstance(task.params, dict):
            task.params = types.MappingProxyType(dict(task.params))  # type: ignore[assignment]
        elif how == 2 and isinstance(task.params, dict):
            task.params = list(task.params.items())  # type: ignore[assignment]  # a key, not a dict
        elif how == 3 and isinstance(task.params, dict):
            task.params = dict(reversed(task.params.items()))  # equal dict, other order: other key
        elif how == 4 and isinstance(task.inputs, list) and task.inputs:
            task.inputs = [*task.inputs, task.inputs[0]]  # a buffer named twice
        elif how == 5 and isinstance(task.outputs, list) and task.outputs:
            task.outputs = [*task.outputs, task.outputs[-1]]
        elif how == 6 and isinstance(task.inputs, list) and task.inputs:
            task.inputs = [True if b == 1 else b for b in task.inputs]  # True is not buffer 1
    if tasks:  # the same records again
        tasks.extend(draw(st.lists(st.sampled_from(tasks), max_size=6)))
    for buf in prog.buffers if isinstance(prog.buffers, list) else []:
        if draw(st.integers(0, 9)) == 0 and isinstance(buf.shape, tuple):
            object.__setattr__(buf, "shape", list(buf.shape))  # an unusable operand
    return prog


def _as_tuples(found: TaskRegions) -> tuple[Any, ...]:
    ids_in, reads, ids_out, writes = found
    return tuple(ids_in), reads, tuple(ids_out), writes


def _direct(task: Any, buffers: dict[int, Any]) -> tuple[Any, Any] | None:
    """``op_footprint`` of a task whose opcode, params and operands are all usable (logical
    coordinates), else None."""
    operands = [*task.inputs, *task.outputs]
    if type(task.op) is not InstructionKind or type(task.params) is not dict:
        return None
    if not all(type(b) is int and b in buffers for b in operands):
        return None
    ins = [Operand.of_buffer(buffers[b]) for b in task.inputs]
    outs = [Operand.of_buffer(buffers[b]) for b in task.outputs]
    if None in ins or None in outs:
        return None
    reads, writes = op_footprint(task.op, task.params, ins, outs)  # type: ignore[arg-type]
    return (
        [_logical(r, o) for r, o in zip(reads, ins, strict=True)],  # type: ignore[arg-type]
        [_logical(w, o) for w, o in zip(writes, outs, strict=True)],  # type: ignore[arg-type]
    )


@given(_keyed_programs())
def test_the_keyed_batch_equals_each_tasks_own_footprint(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    columns = task_columns(ix.tasks)
    found = all_task_regions(ix.tasks, ix.inputs, ix.outputs, ix.buffers, Memo(), columns)
    keyed = columns is not None and {*map(type, columns.ops)} <= {InstructionKind}
    assert len(found) == ix.n
    for pos, task in enumerate(ix.tasks):
        alone = task_regions(task, ix.buffers, Memo())  # a fresh memo: nothing shared with another task
        if found[pos] is None:  # the unkeyed batch leaves unhashable params to task_regions
            assert not keyed
            continue
        assert _as_tuples(found[pos]) == _as_tuples(alone)
        if isinstance(task, Task) and isinstance(task.inputs, list) and isinstance(task.outputs, list):
            direct = _direct(task, ix.buffers)
            if direct is not None:
                assert (found[pos][1], found[pos][3]) == direct


def _identical(a: Any, b: Any) -> bool:
    """Same type and value, recursively, in the same order; floats by their bits (NaN is itself)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_identical, a, b))
    return bool(a == b)


def _assert_keys_merge_only_identical_params(tasks: list[Any]) -> None:
    columns = task_columns(tasks)
    if columns is None:
        return
    first: dict[tuple[Any, bytes], Any] = {}
    for op, key, params in zip(columns.ops, columns.param_keys, columns.params, strict=True):
        if key is not None:
            assert _identical(first.setdefault((op, key), params), params)


@given(_keyed_programs())
def test_tasks_share_a_key_only_where_their_params_are_identical(prog: MegakernelProgram) -> None:
    _assert_keys_merge_only_identical_params(prog.tasks if isinstance(prog.tasks, list) else [])


def test_nan_params_of_the_same_bits_share_a_key() -> None:
    """Two NaN objects (as JSON loading makes them) are one key; another NaN payload is another."""
    other_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    params: list[Any] = [{"n_off": float("nan")} for _ in range(KEYED_MIN_TASKS)] + [{"n_off": other_nan}]
    prog = _tiles(params)
    _assert_keys_merge_only_identical_params(prog.tasks)
    keys = task_columns(prog.tasks).param_keys  # type: ignore[union-attr]
    assert len(set(keys[:-1])) == 1 and keys[-1] != keys[0]


def _tiles(params: list[Any]) -> MegakernelProgram:
    """GEMV tiles over operands of one shape, one per params dict (every task the same codes)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 8))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (64, 8))
    for i, p in enumerate(params):
        y = b.new_buffer(f"y{i}", BufferKind.IO_OUTPUT, DType.F32, (1, 64))
        b.add_task(InstructionKind.GEMV_TILE, [x, w], [y], params=p, label=f"t{i}")
    return b.build()


_N_OFF = st.sampled_from([0, 8, 16, 56, 60, 64, *_VALUES])


@given(st.lists(_N_OFF, min_size=KEYED_MIN_TASKS, max_size=KEYED_MIN_TASKS + 8))
def test_the_validator_keys_tiles_by_their_params(offsets: list[Any]) -> None:
    prog = _tiles([{"K": 8, "N_tile": 8, "n_off": n} for n in offsets])
    ix = ProgramIndex(prog)
    for pos, task in enumerate(ix.tasks):
        assert _as_tuples(ix.regions(pos)) == _as_tuples(task_regions(task, ix.buffers, Memo()))
    keyed = [key for key in ix._memo.ops if type(key[1]) is bytes]
    assert {key[1] for key in keyed} == {param_key(t.params) for t in ix.tasks} - {None}


@pytest.mark.parametrize("n", [KEYED_MIN_TASKS - 1, KEYED_MIN_TASKS])
def test_the_columns_are_taken_from_keyed_min_tasks_on(n: int) -> None:
    ix = ProgramIndex(_tiles([{"K": 8, "N_tile": 8, "n_off": 8 * (i % 8)} for i in range(n)]))
    ix.regions(0)
    assert any(type(key[1]) is bytes for key in ix._memo.ops) == (n >= KEYED_MIN_TASKS)
    assert ("columns" in vars(ix)) == (n >= KEYED_MIN_TASKS)  # fewer tasks: the columns are not built


def test_an_int_opcode_or_a_params_list_equal_to_a_keyed_task_is_malformed() -> None:
    # ``7 == GEMV_TILE`` hashes alike, and a list of items has a params key too: neither may take
    # the footprint of an equal-looking keyed task (both are malformed records).
    params = {"K": 8, "N_tile": 8, "n_off": 8}
    prog = _tiles([dict(params) for _ in range(KEYED_MIN_TASKS)])
    prog.tasks[-1].op = int(InstructionKind.GEMV_TILE)  # type: ignore[assignment]
    prog.tasks[-2].params = list(params.items())  # type: ignore[assignment]
    ix = ProgramIndex(prog)
    for pos, task in enumerate(ix.tasks):
        assert _as_tuples(ix.regions(pos)) == _as_tuples(task_regions(task, ix.buffers, Memo()))
    assert not ix.regions(ix.n - 1)[3][0].exact
    assert not ix.regions(ix.n - 2)[3][0].exact
