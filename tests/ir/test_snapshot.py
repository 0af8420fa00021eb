"""``snapshot`` (amkspec.ir.snapshot): an exact copy that shares nothing mutable with its original."""

from __future__ import annotations

import copy
import threading
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.ir import FormatError, MegakernelProgram, Task, Wait, dumps
from amkspec.ir.snapshot import snapshot
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import validate

PROGRAMS = st.one_of(valid_programs(max_tasks=8), arbitrary_programs(max_tasks=8))

_MUTABLE = (list, dict, set)


def _task(**fields: Any) -> Task:
    return Task(**{"id": 0, "op": 5, "inputs": [], "outputs": [], "out_counter": 0, **fields})


def _nodes(value: Any, seen: dict[int, Any]) -> None:
    """Every list, dict and record reachable from ``value``, by id."""
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        if isinstance(v, list):
            seen[id(v)] = v
            stack.extend(v)
        elif isinstance(v, dict):
            seen[id(v)] = v
            stack.extend(v.values())
        elif attrs.has(type(v)):
            seen[id(v)] = v
            stack.extend(getattr(v, a.name) for a in attrs.fields(type(v)))
        elif isinstance(v, tuple):
            stack.extend(v)


def _same_shape(a: Any, b: Any) -> None:
    """``a`` and ``b`` hold equal values of the same types, node for node."""
    assert type(a) is type(b)
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same_shape(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_shape(a[k], b[k])
    elif attrs.has(type(a)):
        for f in attrs.fields(type(a)):
            _same_shape(getattr(a, f.name), getattr(b, f.name))
    elif a == a:  # NaN is the one value unequal to itself
        assert a == b


@settings(max_examples=60, deadline=None)
@given(PROGRAMS)
def test_a_snapshot_is_equal_node_for_node_and_shares_nothing_mutable(prog: MegakernelProgram) -> None:
    copy_ = snapshot(prog)
    _same_shape(prog, copy_)
    ours: dict[int, Any] = {}
    theirs: dict[int, Any] = {}
    _nodes(prog, ours)
    _nodes(copy_, theirs)
    assert ours.keys().isdisjoint(theirs.keys())
    assert len(theirs) >= len(ours)  # a list two records share is two lists in the copy


@settings(max_examples=60, deadline=None)
@given(PROGRAMS)
def test_a_snapshot_gets_the_same_diagnostics_and_stats(prog: MegakernelProgram) -> None:
    ours, theirs = validate(prog), validate(snapshot(prog))
    assert ours.diagnostics == theirs.diagnostics
    assert ours.stats == theirs.stats


@settings(max_examples=40, deadline=None)
@given(PROGRAMS)
def test_changing_the_original_everywhere_leaves_the_snapshot_as_it_was(prog: MegakernelProgram) -> None:
    copy_ = snapshot(prog)
    before = dumps(copy_)
    seen: dict[int, Any] = {}
    _nodes(prog, seen)
    for node in seen.values():
        if isinstance(node, list):
            node.append(-1)
        elif isinstance(node, dict):
            node["planted"] = -1
        elif isinstance(node, (Task, Wait)):
            node.extra = {"planted": 1}
    assert dumps(copy_) == before


def test_values_keep_their_exact_types() -> None:
    task = _task(inputs=[True, 1], outputs=[1.0], params={"a": True, "b": 1, "c": 1.0, "t": (1, 2)})
    copy_ = snapshot(task)
    assert [type(v) for v in copy_.inputs] == [bool, int]
    assert [type(v) for v in copy_.params.values()] == [bool, int, float, tuple]
    assert type(copy_.op) is int


def test_no_converter_runs_on_the_copy() -> None:
    prog = MegakernelProgram()
    from amkspec.ir import Buffer, BufferKind, DType

    buf = Buffer(0, "x", BufferKind.ACTIVATION, DType.F32, (1, 4))
    object.__setattr__(buf, "shape", [1, 4])  # past the converter, as a broken record may hold
    prog.buffers.append(buf)
    assert type(snapshot(prog).buffers[0].shape) is list


def test_an_unset_slot_stays_unset() -> None:
    task = _task()
    del task.params
    copy_ = snapshot(task)
    assert not hasattr(copy_, "params")
    assert copy_.id == 0


def test_a_cycle_and_a_shared_list_in_params_are_copied_as_deepcopy_copies_them() -> None:
    loop: list[Any] = []
    loop.append(loop)
    shared = [1, 2]
    task = _task(params={"loop": loop, "a": [shared], "b": [shared]})
    got = snapshot(task).params
    assert got["loop"] is not loop and got["loop"][0] is got["loop"]
    assert got["a"][0] is got["b"][0] and got["a"][0] is not shared


def test_any_depth_of_nested_lists_copies() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    got = snapshot(_task(params={"deep": deep})).params["deep"]
    depth = 0
    while got:
        assert len(got) == 1
        got, depth = got[0], depth + 1
    assert depth == 100_000


def test_a_cycle_through_records_is_copied() -> None:
    task = _task()
    task.extra["self"] = task
    copy_ = snapshot(task)
    assert copy_ is not task and copy_.extra["self"] is copy_


def test_records_nested_past_the_stack_are_a_format_error() -> None:
    task = _task()
    for _ in range(50_000):
        task = _task(extra={"inner": task})
    with pytest.raises(FormatError, match="nest too deep"):
        snapshot(task)


def test_an_object_that_cannot_be_copied_is_kept_as_it_is() -> None:
    lock = threading.Lock()
    with pytest.raises(TypeError):
        copy.deepcopy(lock)
    assert snapshot(_task(params={"lock": lock})).params["lock"] is lock
