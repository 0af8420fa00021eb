"""Memory safety: every task's operands have the shapes and dtypes its opcode assumes (spec §3.4, §4).

This obligation family goes beyond the original implementation (spec §4.5): for
every opcode the shapes and dtypes of a task's inputs and
outputs are derived from its semantics (spec §7) and params, and a task
that would make a VM read or write outside a buffer, or compute from elements
that do not mean what the opcode assumes, is rejected with an M4xx code.

Only well-formed parts are judged: a task with an unknown opcode, the wrong
arity, a dangling buffer id or a malformed shape is skipped (the structure
checks report it), and a param that is missing or not an int32 disables the
rules that need it. :func:`check_memory_safety` never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import chain
from typing import Any

from amkspec.ir import Buffer, InstructionKind, MegakernelProgram, Task
from amkspec.ir.columns import TaskColumns, task_columns
from amkspec.proofs.diagnostics import Diagnostic
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.rule_keys import RULE_KEYS_AT_ONCE, operand_kinds, rule_keys
from amkspec.proofs.shapes.context import (
    OpContext,
    Operand,
    Rule,
    buffer_operand,
)
from amkspec.proofs.shapes.registry import OP_RULES, arity_ok, check_op

SHAPE_RULES: dict[InstructionKind, tuple[Rule, ...]] = {op: r.rules for op, r in OP_RULES.items()}
"""Each opcode's shape/dtype rules as ``Rule(code, text)``, in the order they are checked."""


def _records(buffers: Any) -> dict[int, Buffer]:
    """Buffer id → buffer record; the first occurrence of an id wins."""
    records: dict[int, Buffer] = {}
    for buf in buffers if isinstance(buffers, list) else []:
        if isinstance(buf, Buffer) and type(buf.id) is int and buf.id not in records:
            records[buf.id] = buf
    return records


class _LazyOperands(dict[int, "Operand | None"]):
    """Buffer id → its operand view, built on first use (a program whose tasks share rule keys
    needs the operands of few buffers); ``lazy[bid]`` is None for a malformed shape or no buffer."""

    def __init__(self, records: dict[int, Buffer], well_formed: bool) -> None:
        super().__init__()
        self.records = records
        self.well_formed = well_formed

    def __missing__(self, bid: int) -> Operand | None:
        buf = self.records.get(bid)
        operand = self[bid] = buffer_operand(buf, self.well_formed) if buf is not None else None
        return operand


MEMO_MIN_TASKS = 64
"""Programs with fewer tasks are checked task by task: their keys cost more than the rules they
save (a key costs about a third of a GEMV tile's rules, and small programs repeat few keys)."""


def check_memory_safety(
    prog: MegakernelProgram, index: ProgramIndex | None = None, *, memo: bool | None = None
) -> list[Diagnostic]:
    """M4xx findings for every task whose operands disagree with its opcode's shape rules (spec §7).

    ``index`` (the validator's program index) is optional: it spares resolving the buffer ids
    again. With ``memo`` the rules run once per rule key (:func:`_check_memoised`) within this
    call: a task whose key is that of a task they found nothing wrong with is skipped, any other
    task is checked (so every message names its own task and buffers). ``memo=False`` checks
    every task; the findings are the same. By default (None) the memo is used from
    :data:`MEMO_MIN_TASKS` tasks on.
    """
    tasks = index.tasks if index is not None else prog.tasks if isinstance(prog.tasks, list) else []
    # what the structure checks found well formed (index.buffers_well_formed, .tasks_well_formed)
    shapes = index is not None and index.buffers_well_formed
    plain = shapes and index is not None and index.tasks_well_formed
    if index is not None and (shapes or {*map(type, index.buffers.values())} <= {Buffer}):
        records = index.buffers  # the same first-by-id map, every record a Buffer
    else:
        records = _records(prog.buffers)
    if len(tasks) >= MEMO_MIN_TASKS if memo is None else memo:
        if index is None:
            return _check_memoised(tasks, records, task_columns(tasks))
        return _check_memoised(tasks, records, index.columns, shapes, plain, index.rule_keys)
    return _check_each(tasks, records, shapes, plain)


def _check_each(
    tasks: list[Any], records: dict[int, Buffer], well_formed: bool = False, plain: bool = False
) -> list[Diagnostic]:
    """Apply the rules to every task. ``well_formed``: every record is a well-formed buffer;
    ``plain``: besides, every task is (:func:`_plain_context`)."""
    found: list[Diagnostic] = []
    operands = {bid: buffer_operand(buf, well_formed) for bid, buf in records.items()}
    context = _plain_context if plain else _context
    operand = operands.get
    for task in tasks:
        ctx = context(task, operand, found)
        if ctx is not None:
            check_op(ctx)
    return found


def _check_memoised(
    tasks: list[Any],
    records: dict[int, Buffer],
    columns: TaskColumns | None,
    well_formed: bool = False,
    plain: bool = False,
    keys: list[Hashable | None] | None = None,
) -> list[Diagnostic]:
    """Apply the rules to every task whose rule key (:func:`rule_keys`) is not that of a clean
    task before it in its block (:data:`RULE_KEYS_AT_ONCE`). A task that :func:`_context` skips
    reports nothing whatever its key, so the key need not judge it. ``well_formed`` and
    ``plain`` as for :func:`_check_each`; ``keys``: the tasks' :func:`rule_keys`, when the caller
    has them (used when the tasks are one block)."""
    found: list[Diagnostic] = []
    operand = _LazyOperands(records, well_formed).__getitem__
    context = _plain_context if plain else _context
    n = len(tasks)
    for start in range(0, n, RULE_KEYS_AT_ONCE):  # block by block: see RULE_KEYS_AT_ONCE
        if n <= RULE_KEYS_AT_ONCE:
            block = tasks
            if keys is None:
                keys = rule_keys(columns, 0, n, operand_kinds(records, well_formed))
        else:
            block = tasks[start : start + RULE_KEYS_AT_ONCE]
            kinds = operand_kinds(_named(records, columns, start, len(block)), well_formed)
            keys = rule_keys(columns, start, len(block), kinds)
        clean: set[Hashable] = set()
        for task, key in zip(block, keys, strict=True):
            if key in clean:
                continue
            ctx = context(task, operand, found)
            if ctx is None:
                continue
            before = len(found)
            check_op(ctx)
            if key is not None and len(found) == before:
                clean.add(key)
    return found


def _named(records: dict[int, Buffer], columns: TaskColumns | None, start: int, n: int) -> dict[int, Buffer]:
    """The records of the buffers that the ``n`` tasks from position ``start`` on name (all of
    them when an operand list is not a list of hashables: :func:`rule_keys` then gives no key)."""
    if columns is None:
        return {}
    try:
        ids = {*chain.from_iterable(columns.inputs[start : start + n])}
        ids.update(chain.from_iterable(columns.outputs[start : start + n]))
    except TypeError:
        return records
    ids &= records.keys()
    return dict(zip(ids, map(records.__getitem__, ids), strict=True))


def _context(
    task: Any, operand: Callable[[int], Operand | None], found: list[Diagnostic]
) -> OpContext | None:
    """The op application of a task, or None when the structure checks must judge it first."""
    if not isinstance(task, Task):
        return None
    op, inputs, outputs, params = task.op, task.inputs, task.outputs, task.params
    if not (isinstance(op, InstructionKind) and isinstance(inputs, list) and isinstance(outputs, list)):
        return None
    if not isinstance(params, dict) or not arity_ok(op, len(inputs), len(outputs)):
        return None
    ins: list[Operand] = []
    for bid in inputs:  # loops, not comprehensions: most tasks have one to three operands
        view = operand(bid) if type(bid) is int else None
        if view is None:
            return None
        ins.append(view)
    outs: list[Operand] = []
    for bid in outputs:
        view = operand(bid) if type(bid) is int else None
        if view is None:
            return None
        outs.append(view)
    return OpContext(task, op, ins, outs, params, found)


def _plain_context(task: Task, operand: Callable[[int], Any], found: list[Diagnostic]) -> OpContext:
    """:func:`_context` of a task the structure checks found well formed (every task of
    :attr:`~amkspec.proofs.index.ProgramIndex.tasks_well_formed`: exactly a Task, its opcode an
    InstructionKind of an allowed arity, its operands lists of known buffer ids, its params a dict)
    whose buffers are all well formed (each has an operand): nothing is left to test."""
    return OpContext(
        task, task.op, list(map(operand, task.inputs)), list(map(operand, task.outputs)), task.params, found
    )
