"""Facts the structure scan reads instead of testing every task again (spec §1.4, §3.1, §5.2).

The index records while it indexes whether every out_counter is an int
(``plain_out_counters``) and how long the longest waits field is (``longest_waits``); the task
columns record whether every params is exactly a dict (``params_dicts``, read off the distinct
params keys); ``every_exactly`` counts types instead of collecting them; the sm test counts the
likely type first. Each equals its plain definition on random, repeated and broken programs.
"""

from __future__ import annotations

import collections
import copy
from enum import IntEnum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Task, Wait
from amkspec.ir.columns import every_exactly, task_columns
from amkspec.programs.strategies import valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.structure import _in_place, _scan_each, _sms_fit, check_ids, check_task
from tests.proofs.test_column_fast_paths import programs


class _Flag(IntEnum):
    ONE = 1


class _Params(dict[str, Any]):
    pass


_VALUES = [0, 1, 7, -1, 2**31, True, False, 1.0, None, _Flag.ONE, "1", (1,)]
_ODD_PARAMS: list[Any] = [
    [], (), None, {}, collections.OrderedDict(K=64), _Params(K=64), {"K": [1]}, {"K": {1}}, "K",
]
_ODD_SMS = [None, 0, 1, -1, 131, 132, True, 1.0, 2**31, "0"]
_ODD_IDS: list[Any] = [True, 1.0, -1, 999, None, "0", _Flag.ONE, 0]
_ODD_OUT_COUNTERS = [None, True, 1.0, _Flag.ONE, "0", 0, 999]
_ODD_WAITS: list[Any] = [
    None, (), [], [Wait(0, 1)], [Wait(0, 1)] * 3, [Wait(0, 1)] * 9, [Wait(0, True)], [None], "w",
    [Wait(0, 1), Wait(1, 1.0)], [Wait(0, 1), Wait(True, 1)], [Wait(0, 1), None],
    [Wait(0, 0)], [Wait(0, -1)], [Wait(0, 2**31)], [Wait(999, 1)], [Wait(0, 1), Wait(999, 2)],
]
_ODD_REFS: list[Any] = [[], [0], [0, 0], [999], [True], (0,), None, [0, 999]]
_ODD_PARAM_VALUES = [2**31, -(2**31) - 1, 2**31 - 1, 1e39, True, 1.0, "x"]


@st.composite
def _broken(draw: st.DrawFn) -> MegakernelProgram:
    """A program of :data:`programs` with some tasks' params, sms, out_counters or waits replaced
    by odd values."""
    prog = draw(programs)
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    records = [t for t in tasks if isinstance(t, Task)]
    if records:
        for others in (prog.buffers, prog.counters):  # an odd id, or a record moved to the end
            if isinstance(others, list) and others and draw(st.integers(0, 3)) == 0:
                at = draw(st.integers(0, len(others) - 1))
                if draw(st.booleans()):
                    object.__setattr__(others[at], "id", draw(st.sampled_from(_ODD_IDS)))
                else:
                    others.append(others.pop(at))
        if draw(st.booleans()):  # every task placed (as in a scheduled program), or none
            placed = draw(st.booleans())
            for pos, task in enumerate(records):
                task.sm = pos % 132 if placed else None
        for _ in range(draw(st.integers(0, 3))):
            task = draw(st.sampled_from(records))
            field, odd = draw(st.sampled_from([
                ("params", _ODD_PARAMS), ("sm", _ODD_SMS), ("out_counter", _ODD_OUT_COUNTERS),
                ("waits", _ODD_WAITS), ("inputs", _ODD_REFS), ("outputs", _ODD_REFS),
                ("param", _ODD_PARAM_VALUES),
            ]))
            if field != "param":
                setattr(task, field, copy.copy(draw(st.sampled_from(odd))))
            elif isinstance(task.params, dict) and task.params:
                task.params[draw(st.sampled_from(sorted(map(str, task.params))))] = draw(st.sampled_from(odd))
    return prog


@given(st.lists(st.sampled_from(_VALUES), max_size=12), st.sampled_from([int, bool, type(None), _Flag]))
def test_every_exactly_is_a_set_of_the_types_within_one_type(values: list[Any], kind: type) -> None:
    assert every_exactly(values, kind) is ({*map(type, values)} <= {kind})


@given(_broken())
def test_the_index_facts_equal_their_definitions(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    tasks = ix.tasks
    for records, in_place in ((prog.buffers, ix.buffers_in_place), (prog.counters, ix.counters_in_place)):
        records = records if isinstance(records, list) else []
        ids = [getattr(r, "id", None) for r in records]
        assert in_place is all(type(rid) is int and rid == i for i, rid in enumerate(ids))
    ocs = [getattr(t, "out_counter", None) for t in tasks]
    assert ix.plain_out_counters is all(type(oc) is int for oc in ocs)
    waits = [getattr(t, "waits", None) for t in tasks]
    plain = all(type(ws) is list and all(_plain_wait(w) for w in ws) for ws in waits)
    assert ix.plain_waits is plain
    if all(type(w) is list for w in waits):
        assert ix.longest_waits == max(map(len, waits), default=0)
    else:
        assert ix.longest_waits is None


@given(_broken())
def test_params_dicts_is_every_params_exactly_a_dict(prog: MegakernelProgram) -> None:
    columns = task_columns(prog.tasks if isinstance(prog.tasks, list) else [])
    if columns is None:
        return
    dicts = all(type(p) is dict for p in columns.params)
    assert columns.params_dicts is (columns.all_keyed and dicts)


@given(_broken(), st.sampled_from([0, 1, 131, 2**31 - 1]))
def test_the_sm_and_id_tests_equal_their_definitions(prog: MegakernelProgram, top: int) -> None:
    tasks = [t for t in prog.tasks if isinstance(t, Task)] if isinstance(prog.tasks, list) else []
    fit = all(t.sm is None or (type(t.sm) is int and 0 <= t.sm <= top) for t in tasks)
    assert _sms_fit(tasks, top) is fit
    records: list[Any] = prog.tasks if isinstance(prog.tasks, list) else []
    in_place = all(type(getattr(r, "id", None)) is int and r.id == pos for pos, r in enumerate(records))
    assert _in_place(records) is (in_place and all(hasattr(r, "id") for r in records))


def _plain_wait(w: Any) -> bool:
    return type(w) is Wait and type(w.counter) is int and type(w.threshold) is int


def _without_facts(prog: MegakernelProgram) -> ProgramIndex:
    """The program's index with every program-wide fact the task scan reads cleared: each task is
    then tested on its own."""
    ix = ProgramIndex(prog)
    ix.plain_inputs = ix.plain_outputs = ix.plain_out_counters = False
    ix._wait_lists = False  # no longest_waits
    ix.plain_waits = False
    return ix


_FAULTS = [
    (field, value)
    for field, values in (
        ("sm", _ODD_SMS), ("out_counter", _ODD_OUT_COUNTERS), ("waits", _ODD_WAITS), ("inputs", _ODD_REFS),
        ("outputs", _ODD_REFS), ("param", _ODD_PARAM_VALUES),
    )
    for value in values
]


def _scans_agree(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    scan = _scan_each(ix)
    assert scan == _scan_each(_without_facts(prog))
    for pos in set(range(ix.n)) - set(scan.unclean):
        assert list(check_task(ix, pos)) == []


@given(valid_programs(), st.data())
def test_every_single_fault_is_seen_by_the_task_scan_as_without_facts(
    prog: MegakernelProgram, data: st.DataObject
) -> None:
    if not prog.tasks:
        return
    pos = data.draw(st.integers(0, len(prog.tasks) - 1))
    for field, value in _FAULTS:
        broken = copy.deepcopy(prog)
        task = broken.tasks[pos]
        if field != "param":
            setattr(task, field, copy.copy(value))
        elif task.params:
            task.params[sorted(task.params)[0]] = value
        _scans_agree(broken)


@settings(max_examples=100)
@given(st.one_of(_broken(), programs))
def test_the_task_scan_reading_program_facts_answers_as_without_them(prog: MegakernelProgram) -> None:
    _scans_agree(prog)


def _rows(found: Any) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.buffers, d.counters, d.tasks) for d in found]


@settings(max_examples=100)
@given(_broken())
def test_check_ids_reading_the_index_facts_reports_as_without_them(prog: MegakernelProgram) -> None:
    plain = ProgramIndex(prog)
    plain.buffers_in_place = plain.counters_in_place = False  # every record looked at
    assert _rows(check_ids(ProgramIndex(prog))) == _rows(check_ids(plain))


def test_an_odd_buffer_or_counter_id_clears_its_fact() -> None:
    prog = _one_task()
    for field in ("buffers", "counters"):
        for odd in _ODD_IDS[:-1]:
            broken = copy.deepcopy(prog)
            object.__setattr__(getattr(broken, field)[0], "id", odd)
            ix = ProgramIndex(broken)
            assert not getattr(ix, f"{field}_in_place") and list(check_ids(ix))
    ix = ProgramIndex(prog)
    assert ix.buffers_in_place and ix.counters_in_place and not list(check_ids(ix))


def _one_task() -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.COPY, [x], [y])
    return b.build()


def test_one_odd_sm_or_params_record_clears_the_fact() -> None:
    tasks = [Task(id=i, op=0, inputs=[], outputs=[], out_counter=0, params={}, sm=i) for i in range(5)]  # type: ignore[arg-type]
    assert _sms_fit(tasks, 4) and not _sms_fit(tasks, 3)
    for odd in (True, 1.0, -1, "0"):
        tasks[2].sm = odd
        assert not _sms_fit(tasks, 4)
    tasks[2].sm = None
    assert _sms_fit(tasks, 4)
    tasks[0].sm, tasks[2].sm = None, 5  # the first one unassigned, another out of range
    assert not _sms_fit(tasks, 4)
    for params in _ODD_PARAMS:
        if type(params) is dict:
            continue
        tasks[3].params = params
        columns = task_columns(tasks)
        assert columns is not None and not columns.params_dicts
