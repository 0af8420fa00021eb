"""The validator's batch path (spec §3.3): :func:`all_task_regions` gives every task the
regions :func:`~amkspec.footprint.reference.task_regions` gives it, keyed by the tasks' columns
or rule keys so that equal tasks share one computation. Tested against the reference
(``tests/footprint``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from amkspec.footprint.memo import Memo
from amkspec.footprint.reference import TaskRegions, op_regions, operands_of, task_regions
from amkspec.ir import Buffer, InstructionKind, Task
from amkspec.ir.columns import TaskColumns

KEYED_MIN_TASKS = 64
"""From this many tasks the validator passes :func:`all_task_regions` the tasks' columns (on
fewer, building them costs more than the params keys save: about even at 60 lowered tasks)."""


def all_task_regions(
    tasks: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    columns: TaskColumns | None = None,
    well_formed: bool = False,
    rule_keys: Sequence[Any] | None = None,
    kinds: Mapping[int, int] | None = None,
) -> list[TaskRegions | None]:
    """:func:`task_regions` of every task, in one pass (the validator's batch path).

    ``inputs[pos]`` (``outputs[pos]``) may be the task's own operand list itself (the same
    object) when the caller has checked that it holds only int ids of ``buffers``; the ids are
    then not checked again and the list is returned as the task's ids. A task whose lists are
    not passed that way, whose opcode or params are not plain, or that names a buffer whose
    operand is unusable takes :func:`task_regions`. An entry is None where that raised (the
    caller may then ask :func:`task_regions` again, where the error belongs).

    ``columns``, the tasks' :class:`~amkspec.ir.columns.TaskColumns` when the caller has
    them (which exist only for a list of plain Task records: not tested again), key each task by
    its exact params key (:func:`_keyed_task_regions`). ``well_formed``:
    as for :meth:`Memo.codes_of`. ``rule_keys``, the tasks' keys of
    :func:`~amkspec.proofs.rule_keys.rule_keys` (given with ``columns`` by the validator, which
    shares them with memory safety), key each task instead (:func:`_rule_keyed_task_regions`)
    where every buffer is well formed (then a known operand always has a kind: no key slot is
    None but past a task's last operand). ``kinds``: the buffers'
    :func:`~amkspec.proofs.rule_keys.operand_kinds`, when the caller has them (for
    :meth:`Memo.codes_of`).
    """
    code = memo.codes_of(buffers, well_formed, kinds)
    if columns is None and not {*map(type, tasks)} <= {Task}:  # odd records (columns: none): each its own way
        return _each(zip(tasks, repeat(buffers), repeat(memo)), task_regions)
    own: tuple[list[Any], list[Any], list[Any], Sequence[Any], list[Any]]
    if columns is None:
        ops, params = [t.op for t in tasks], [t.params for t in tasks]
        own = ([t.inputs for t in tasks], [t.outputs for t in tasks], ops, _items_keys(ops, params), params)
    elif rule_keys is not None and well_formed and columns.plain_ops:
        own_lists, params = (columns.inputs, columns.outputs), columns.params
        rows = zip(inputs, outputs, *own_lists, columns.ops, rule_keys, params, tasks, strict=True)
        return _rule_keyed_task_regions(rows, buffers, memo, code)
    else:
        keys: Sequence[Any] = columns.param_keys
        if not columns.plain_ops:
            plain = [type(op) is InstructionKind for op in columns.ops]
            keys = [k if fine else None for fine, k in zip(plain, keys, strict=True)]
        own = (columns.inputs, columns.outputs, columns.ops, keys, columns.params)
    return _keyed_task_regions(tasks, inputs, outputs, own, buffers, memo, code)


def _items_keys(ops: list[Any], params: list[Any]) -> list[tuple[Any, ...] | None]:
    """The params key of each task when the caller has no exact ones: its params' items (equal
    values such as ``1`` and ``1.0`` share it, and so do their footprints: every rule reads a
    non-recipe param through ``int()``), None where the opcode or the params are not plain."""
    return [
        tuple(p.items()) if type(op) is InstructionKind and type(p) is dict else None
        for op, p in zip(ops, params, strict=True)
    ]


def _keyed_task_regions(
    tasks: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    own: tuple[list[Any], list[Any], list[Any], Sequence[Any], list[Any]],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    code: Mapping[int, int | None],
) -> list[TaskRegions | None]:
    """:func:`all_task_regions` of plain task records over their columns ``own``: each task's
    inputs, outputs, opcode, params key and params.

    A task's key is ``(opcode, params key, input codes, output codes)``, flattened to five items
    for two inputs and one output (most tasks: no tuples of codes to build). The params key is the
    exact :func:`~amkspec.ir.columns.param_key` (equal keys mean equal params of equal types
    in equal order; a bytes is never equal to :func:`task_regions`' own keys) or, without it, the
    params' items (:func:`_items_keys`, :func:`task_regions`' own key), so a hit is the
    :func:`op_footprint` the task itself would get. A task without a params key, or that misses
    with params that are not a dict or with an unusable operand, takes :func:`task_regions`; an
    unhashable key (a FUSED recipe's items) leaves the entry None.
    """
    get = memo.ops.get

    def one(
        ins: Any, outs: Any, own_ins: Any, own_outs: Any, op: Any, params_key: Any, params: Any, task: Any
    ) -> TaskRegions:
        if params_key is None:
            return task_regions(task, buffers, memo)
        key: tuple[Any, ...]
        codes_in: tuple[int | None, ...] | None
        codes_out: tuple[int | None, ...] | None
        if ins is own_ins and outs is own_outs and len(ins) == 2 and len(outs) == 1:
            # most tasks (x and W, a and b): one flat key, no tuple of codes unless it misses
            key = (op, params_key, code[ins[0]], code[ins[1]], code[outs[0]])
            cached = get(key)
            if cached is not None:
                return ins, cached[0], outs, cached[1]
            codes_in, codes_out = key[2:4], key[4:]
        else:
            if ins is own_ins:
                # the codes without a comprehension: most tasks have one to three operands
                codes_in = (code[ins[0]],) if len(ins) == 1 else tuple([code[b] for b in ins])
            else:  # e.g. a buffer named twice (the caller's list names it once)
                ins, codes_in = _own_operands(own_ins, code, buffers, memo)
            if outs is own_outs:
                codes_out = (code[outs[0]],) if len(outs) == 1 else tuple([code[b] for b in outs])
            else:
                outs, codes_out = _own_operands(own_outs, code, buffers, memo)
            key = (op, params_key, codes_in, codes_out)
            cached = get(key)
            if cached is not None:
                return ins, cached[0], outs, cached[1]
        return _missed(memo, key, op, params, codes_in, codes_out, ins, outs, task, buffers)

    return _each(zip(inputs, outputs, *own, tasks, strict=True), one)


def _rule_keyed_task_regions(
    rows: Iterable[tuple[Any, Any, Any, Any, Any, Any, Any, Any]],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    code: Mapping[int, int | None],
) -> list[TaskRegions | None]:
    """:func:`all_task_regions` of plain task records keyed by their rule keys: each row holds a
    task's checked inputs and outputs, its own ones, its opcode, rule key, params and the task.

    Equal rule keys mean equal opcodes, exact params and operands of equal shapes and dtypes
    (:func:`~amkspec.proofs.rule_keys.rule_keys`), hence equal :func:`op_footprint` (a rule key
    is never equal to :func:`task_regions`' own keys, whose second item is a tuple, not bytes).
    A key is used only where every operand of the task's own lists is a known buffer with a
    usable operand (every operand then has a kind, so the key fixes the operand counts): the
    checked lists are the task's own (every id known, none repeated), or its own lists are
    :func:`_own_operands` with a code for each (e.g. SILU_MUL's ``[gate, gate]``: the rules read
    operands, not which ones are one buffer); any other task, one without a key, and a miss whose
    params are not a dict take :func:`task_regions`; an entry is None where that raised.
    """
    get = memo.ops.get

    def one(
        ins: Any, outs: Any, own_ins: Any, own_outs: Any, op: Any, key: Any, params: Any, task: Any
    ) -> TaskRegions:
        if key is None:
            return task_regions(task, buffers, memo)
        codes_in = codes_out = None  # of the task's own lists, when they are not the checked ones
        if ins is not own_ins or outs is not own_outs:
            ins, codes_in = _own_operands(own_ins, code, buffers, memo)
            outs, codes_out = _own_operands(own_outs, code, buffers, memo)
            if codes_in is None or codes_out is None or None in codes_in or None in codes_out:
                return task_regions(task, buffers, memo)
        cached = get(key)
        if cached is not None:
            return ins, cached[0], outs, cached[1]
        if type(params) is dict and (codes_in is None or codes_out is None):
            codes_in, codes_out = tuple([code[b] for b in ins]), tuple([code[b] for b in outs])
        return _missed(memo, key, op, params, codes_in, codes_out, ins, outs, task, buffers)

    return _each(rows, one)


def _each(rows: Iterable[tuple[Any, ...]], one: Callable[..., TaskRegions]) -> list[TaskRegions | None]:
    """``one(*row)`` of every row (a task's :func:`task_regions`, spec §3.3), None where it
    raised: the caller asks :func:`task_regions` again, where the error belongs."""
    found: list[TaskRegions | None] = []
    add = found.append
    for row in rows:
        try:
            add(one(*row))
        except Exception:  # noqa: BLE001 - left None: task_regions raises it again where it is asked
            add(None)
    return found


def _missed(
    memo: Memo,
    key: Any,
    op: Any,
    params: Any,
    codes_in: tuple[int | None, ...] | None,
    codes_out: tuple[int | None, ...] | None,
    ins: Any,
    outs: Any,
    task: Any,
    buffers: Mapping[int, Buffer],
) -> TaskRegions:
    """A task whose key is not in the memo yet: :func:`op_regions` of its operands, stored under
    ``key``, when its params are a dict and each operand has a code; else :func:`task_regions`."""
    if (
        type(params) is dict
        and codes_in is not None
        and codes_out is not None
        and None not in codes_in
        and None not in codes_out
    ):
        regions = op_regions(memo, key, op, params, codes_in, codes_out)  # type: ignore[arg-type]
        return ins, regions[0], outs, regions[1]
    return task_regions(task, buffers, memo)

def _own_operands(
    value: Any, code: Mapping[int, int | None], buffers: Mapping[int, Buffer], memo: Memo
) -> tuple[tuple[int, ...], tuple[int | None, ...] | None]:
    """:func:`~amkspec.footprint.reference.operands_of` of a task's own operand list, where
    ``code`` holds the code of every buffer of ``buffers``: a list of exact ints gives its ids
    and their codes (None for an id that is not a buffer's, as for an unusable one), anything
    else takes :func:`~amkspec.footprint.reference.operands_of`."""
    if type(value) is list:
        if len(value) == 2:  # e.g. SILU_MUL's [gate, gate]: no set, no map
            first, second = value
            if type(first) is int and type(second) is int:
                return (first, second), (code.get(first), code.get(second))
        elif {*map(type, value)} <= {int}:
            return tuple(value), tuple(map(code.get, value))
    return operands_of(value, buffers, memo)
