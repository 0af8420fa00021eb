"""The whole-column fast paths of the structure scan and of the memory-safety rule keys change no
finding (spec §3.1, §7): ``structure._scan_columns`` answers as ``structure._scan_each`` or not
at all, the memory memo keyed a column at a time agrees with checking every task, and
``columns.param_key`` is exact about values, types and order."""

from __future__ import annotations

import copy
import math
from enum import IntEnum
from typing import Any

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Task, Wait
from amkspec.ir.columns import param_key, task_columns
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import check_memory_safety
from amkspec.proofs.structure import (
    _all_fine,
    _scan_columns,
    _scan_each,
    check_counter_init,
    check_structure,
    scan_tasks,
)
from tests.proofs.test_rule_memo import repeated_tasks


class Flag(IntEnum):
    ONE = 1
    SIXTY_FOUR = 64


class Name(str):
    pass


class Count(int):
    pass


_ODD_VALUES = [
    True, False, 1.0, -0.0, 0.0, math.nan, math.inf, 2**31, 2**40, 1e39, "x", None, [1], (1,), {"a": 1},
    Flag.ONE, Flag.SIXTY_FOUR, Count(1), Name("x"), 64, 0, 8, -1,
]
_ODD_IDS = [True, 1.0, -1, 999, None, "a", [0], Count(0)]


def _mutate(draw: st.DrawFn, prog: MegakernelProgram) -> None:
    """Break one field of one task (or of its wait, or the task record itself) in a way the
    per-task scan tells apart from a clean task."""
    if not prog.tasks:
        return
    pos = draw(st.integers(0, len(prog.tasks) - 1))
    task = prog.tasks[pos]
    if not isinstance(task, Task) or {type(task.inputs), type(task.outputs), type(task.waits)} != {list}:
        return  # broken already
    what = draw(st.sampled_from([
        "param", "param_key", "drop_param", "input", "repeat", "output", "operands_tuple", "threshold",
        "wait_counter", "waits_tuple", "many_waits", "out_counter", "op", "record", "id", "sm",
    ]))
    if what == "param" and task.params:
        task.params[draw(st.sampled_from(sorted(task.params)))] = draw(st.sampled_from(_ODD_VALUES))
    elif what == "param_key":
        task.params[draw(st.sampled_from(["zzz", Name("K"), "n_off"]))] = 8
    elif what == "drop_param" and task.params:
        del task.params[draw(st.sampled_from(sorted(task.params)))]
    elif what in ("input", "output"):
        refs = task.inputs if what == "input" else task.outputs
        odd = draw(st.sampled_from(_ODD_IDS))
        if refs and draw(st.booleans()):
            refs[draw(st.integers(0, len(refs) - 1))] = odd
        else:
            refs.append(odd)
    elif what == "repeat" and task.inputs:
        task.inputs.append(task.inputs[0])
    elif what == "operands_tuple":
        task.inputs = tuple(task.inputs)  # type: ignore[assignment]
    elif what in ("threshold", "wait_counter") and task.waits:
        i = draw(st.integers(0, len(task.waits) - 1))
        field = "threshold" if what == "threshold" else "counter"
        value = draw(st.sampled_from([True, 0, 2**31, 999, 1.0]))
        task.waits[i] = attrs.evolve(task.waits[i], **{field: value})
    elif what == "waits_tuple":
        task.waits = tuple(task.waits)  # type: ignore[assignment]
    elif what == "many_waits":
        task.waits = [Wait(counter=task.out_counter, threshold=1)] * 9
    elif what == "out_counter":
        task.out_counter = draw(st.sampled_from([None, True, 999]))  # type: ignore[assignment]
    elif what == "op":
        task.op = draw(st.sampled_from([5, None, InstructionKind.NOP]))  # type: ignore[assignment]
    elif what == "record":
        prog.tasks[pos] = attrs.evolve(task)  # still a Task; then a record of another class
        if draw(st.booleans()):
            prog.tasks[pos] = copy.copy(task.params)  # type: ignore[call-overload]
    elif what == "id":
        task.id = draw(st.sampled_from([True, 1.0, pos + 1]))  # type: ignore[assignment]
    elif what == "sm":
        task.sm = draw(st.sampled_from([True, -1, 10**6, 1.0, None, 0]))  # type: ignore[assignment]


@st.composite
def mutated_programs(draw: st.DrawFn) -> MegakernelProgram:
    """Valid programs, programs with repeated tasks, and either with one to three broken fields."""
    prog = draw(st.one_of(valid_programs(), repeated_tasks()))
    for _ in range(draw(st.integers(0, 3))):
        _mutate(draw, prog)
    return prog


programs = st.one_of(mutated_programs(), arbitrary_programs())


@given(programs)
def test_the_column_scan_answers_as_the_task_scan_or_not_at_all(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    each = _scan_each(ix)
    columns = _scan_columns(ix)
    assert columns is None or columns == each
    if not each.unclean and ix.columns is not None and ix.columns.all_keyed:
        assert columns == each  # every task clean: the column scan must see it


@given(valid_programs())
def test_a_program_of_clean_tasks_is_recognised_a_column_at_a_time(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    each = _scan_each(ix)
    assume(not each.unclean)  # a FUSED recipe is not a PARAM_FIELDS param: the task is looked at
    assert _scan_columns(ix) == each


def _rows(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.tasks, d.buffers) for d in found]


@given(programs)
def test_memory_rule_keys_a_column_at_a_time_change_no_finding(prog: MegakernelProgram) -> None:
    plain = _rows(check_memory_safety(prog, memo=False))
    assert _rows(check_memory_safety(prog, memo=True)) == plain
    ix = ProgramIndex(prog)
    check_structure(ix)
    assert _rows(check_memory_safety(prog, ix, memo=True)) == plain


_LEAVES = st.one_of(
    st.sampled_from(_ODD_VALUES), st.integers(), st.floats(allow_nan=True), st.text(max_size=3), st.booleans()
)
_PARAMS = st.dictionaries(st.sampled_from(["K", "n_off", "N_tile", Name("K")]), st.recursive(
    _LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=2), st.tuples(inner),
                                     st.dictionaries(st.sampled_from(["in", "s"]), inner, max_size=2)),
    max_leaves=4,
), max_size=3)


def _exact(value: Any) -> Any:
    """A value with its exact type at every level and floats by their bits (nan == nan)."""
    if isinstance(value, dict):
        return (type(value), [(_exact(k), _exact(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value), [_exact(v) for v in value])
    if type(value) is float:
        return (float, math.copysign(1.0, value), repr(value))
    return (type(value), value)


@given(_PARAMS, _PARAMS)
def test_equal_param_keys_mean_equal_params_of_equal_types(a: dict[Any, Any], b: dict[Any, Any]) -> None:
    key_a, key_b = param_key(a), param_key(b)
    if key_a is not None and key_a == key_b:
        assert _exact(a) == _exact(b)
    assert param_key(copy.deepcopy(a)) == key_a  # content, not identity, makes the key


def test_values_equal_to_a_clean_one_are_other_keys() -> None:
    keys = [param_key({"n_off": v}) for v in (1, True, 1.0, Flag.ONE, Count(1))]
    assert keys[3] is None and keys[4] is None  # subclasses of int have no key
    assert len({keys[0], keys[1], keys[2]}) == 3
    assert param_key({"a": [1]}) != param_key({"a": (1,)})
    assert param_key({"a": 1, "b": 2}) != param_key({"b": 2, "a": 1})
    assert param_key({Name("a"): 1}) is None


def _gemv_tiles(params: list[dict[str, Any]]) -> MegakernelProgram:
    """GEMV tiles over buffers of equal shapes, one per params dict (many tasks for the column paths)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 8))
    for i, p in enumerate(params):
        w = b.new_buffer(f"w{i}", BufferKind.WEIGHT, DType.F32, (64, 8))
        y = b.new_buffer(f"y{i}", BufferKind.IO_OUTPUT, DType.F32, (1, 64))
        b.add_task(InstructionKind.GEMV_TILE, [x, w], [y], params=p, label=f"t{i}")
    return b.build()


def test_an_int_enum_param_equal_to_a_clean_int_is_reported() -> None:
    # Flag.ONE == 1 (and its JSON form is 1) but it is not an int32: the tile rule is off and the
    # structure scan must flag the task, while n_off=1 is read and its tile [1, 65) leaves y.
    params = [{"K": 8, "N_tile": 64, "n_off": 0}] * 200 + [{"K": 8, "N_tile": 64, "n_off": Flag.ONE}]
    prog = _gemv_tiles([dict(p) for p in params] + [{"K": 8, "N_tile": 64, "n_off": 1}])
    ix = ProgramIndex(prog)
    assert ix.columns is not None and not ix.columns.all_keyed
    assert scan_tasks(ix).unclean == [200]
    assert [d.code for d in check_structure(ix)] == ["S111"]
    found = check_memory_safety(prog, ix)
    assert [(d.code, list(d.tasks)) for d in found] == [("M401", [201])]
    assert _rows(found) == _rows(check_memory_safety(prog, memo=False))


def test_a_repeated_known_id_is_clean_and_a_repeated_unknown_one_is_not() -> None:
    b = ProgramBuilder()
    g = b.new_buffer("g", BufferKind.IO_INPUT, DType.F32, (1, 8))
    outs = [b.new_buffer(f"y{i}", BufferKind.IO_OUTPUT, DType.F32, (1, 8)) for i in range(130)]
    for y in outs:
        b.add_task(InstructionKind.SILU_MUL, [g, g], [y])
    prog = b.build()
    ix = ProgramIndex(prog)
    assert _scan_columns(ix) == ([], True, True)
    prog.tasks[7].inputs = [99999, 99999]
    ix = ProgramIndex(prog)
    assert _scan_columns(ix) is None and _scan_each(ix).unclean == [7]


def test_columns_need_task_records() -> None:
    prog = _gemv_tiles([{"K": 8, "N_tile": 64, "n_off": 0}] * 3)
    assert task_columns(prog.tasks) is not None
    prog.tasks.append(copy.copy(prog.tasks[0].params))  # type: ignore[arg-type]
    assert task_columns(prog.tasks) is None
    assert isinstance(prog.tasks[0], Task)


def _layers(n: int = 70) -> MegakernelProgram:
    """``n`` layers of a GEMV tile then an ADD waiting on it (2n tasks: the column scan runs)."""
    b = ProgramBuilder()
    h = b.new_buffer("h0", BufferKind.IO_INPUT, DType.F32, (1, 8))
    for i in range(n):
        w = b.new_buffer(f"w{i}", BufferKind.WEIGHT, DType.F32, (8, 8))
        y = b.new_buffer(f"y{i}", BufferKind.ACTIVATION, DType.F32, (1, 8))
        t = b.add_task(InstructionKind.GEMV_TILE, [h, w], [y], params={"K": 8, "N_tile": 8, "n_off": 0})
        out = b.new_buffer(f"h{i + 1}", BufferKind.ACTIVATION, DType.F32, (1, 8))
        b.add_task(InstructionKind.ADD, [y, h], [out], waits=[b.after(t)])
        h = out
    return b.build()


def _set_wait(field: str, value: Any) -> Any:
    def edit(task: Task) -> None:
        task.waits[0] = attrs.evolve(task.waits[0], **{field: value})
    return edit


_EDITS: dict[str, Any] = {
    "threshold True": _set_wait("threshold", True),
    "threshold 0": _set_wait("threshold", 0),
    "threshold 2^31": _set_wait("threshold", 2**31),
    "threshold list": _set_wait("threshold", [1]),
    "unknown wait counter": _set_wait("counter", 999),
    "wait counter True": _set_wait("counter", True),
    "nine waits": lambda t: setattr(t, "waits", t.waits * 9),
    "missing required param": lambda t: setattr(t, "op", InstructionKind.EMBED),
    "unknown input": lambda t: t.inputs.append(999),
    "repeated unknown input": lambda t: setattr(t, "inputs", [999, 999]),
    "bool input": lambda t: setattr(t, "inputs", [True, t.inputs[1]]),
    "bool input beside its int": lambda t: setattr(t, "inputs", [1, True]),
    "input list in a list": lambda t: setattr(t, "inputs", [[0], t.inputs[1]]),
    "unknown output": lambda t: setattr(t, "outputs", [999]),
    "no outputs": lambda t: setattr(t, "outputs", []),
    "out_counter None": lambda t: setattr(t, "out_counter", None),
    "int op": lambda t: setattr(t, "op", 11),
    "params None": lambda t: setattr(t, "params", None),
    "bool param": lambda t: t.params.__setitem__("eps", True),
    "nan param": lambda t: t.params.__setitem__("eps", math.nan),
    "unknown param": lambda t: t.params.__setitem__("zzz", 1),
}


def test_every_broken_field_of_a_waiting_task_is_seen_by_both_scans() -> None:
    for name, edit in _EDITS.items():
        prog = _layers()
        edit(prog.tasks[9])  # an ADD that waits on task 8
        ix = ProgramIndex(prog)
        assert _scan_each(ix).unclean == [9], name
        assert _scan_columns(ix) is None, name


def test_a_bool_threshold_equal_to_another_tasks_threshold_is_seen() -> None:
    # (0, counter, True) == (0, counter, 1): a set of wait entries would keep only one of them
    prog = _layers()
    prog.tasks[11].waits = [attrs.evolve(prog.tasks[9].waits[0], threshold=True)]
    ix = ProgramIndex(prog)
    assert _scan_each(ix).unclean == [11]
    assert _scan_columns(ix) is None


def test_a_clean_task_whose_params_have_no_key_leaves_the_answer_to_the_task_scan() -> None:
    prog = _layers()
    params = prog.tasks[8].params
    del params["K"]
    params[Name("K")] = 8  # a str subclass equal to "K": clean, but marshal refuses it
    ix = ProgramIndex(prog)
    assert _scan_each(ix).unclean == []
    assert _scan_columns(ix) is None
    assert scan_tasks(ix) == _scan_each(ix)


def test_tasks_without_a_params_key_are_each_checked() -> None:
    # no params key (Count is an int subclass) for either task: they must not share a memo entry
    first = {"K": 8, "N_tile": 64, "n_off": 0, "zzz": Count(1)}
    prog = _gemv_tiles([first] * 100 + [{**first, "n_off": 8}])
    found = check_memory_safety(prog, memo=True)
    assert [(d.code, list(d.tasks)) for d in found] == [("M401", [100])]
    assert _rows(found) == _rows(check_memory_safety(prog, memo=False))


def test_the_buffer_bound_counts_a_rank_0_buffer_as_one_element() -> None:
    b = ProgramBuilder()
    b.new_buffer("scalar", BufferKind.IO_INPUT, DType.F32, ())
    b.new_buffer("empty", BufferKind.IO_INPUT, DType.F32, (0,))
    buffers = b.build().buffers
    assert not _all_fine(buffers, 3)  # the scalar alone needs 4 bytes
    assert _all_fine(buffers, 1 << 20)
    wide = ProgramBuilder()
    wide.new_buffer("a", BufferKind.IO_INPUT, DType.F32, (1, 1 << 20))
    wide.new_buffer("b", BufferKind.IO_INPUT, DType.F32, (1 << 20, 1))
    # the bound (2 * (2^20)^2 elements) is far above the cap; the exact sum (2^21 elements) is not
    assert _all_fine(wide.build().buffers, 1 << 24)


def test_a_counter_init_equal_to_0_but_not_the_int_0_is_reported() -> None:
    for init, codes in ((0, []), (False, ["S103"]), (0.0, ["S103"]), (1, ["S103"]), (None, ["S103"])):
        prog = _layers(2)
        prog.counters[1] = attrs.evolve(prog.counters[1], init=init)
        assert [d.code for d in check_counter_init(ProgramIndex(prog))] == codes, init
