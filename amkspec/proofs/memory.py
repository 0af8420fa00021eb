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

from collections.abc import Callable
from typing import Any

from amkspec.ir import Buffer, DType, InstructionKind, MegakernelProgram, Task
from amkspec.proofs.diagnostics import Diagnostic
from amkspec.proofs.shapes.context import OpContext, Operand, Rule, buffer_operand, operand_kind
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


class _LazyOperands:
    """Buffer id → its operand view, built on first use (a program whose tasks share rule keys
    needs the operands of few buffers)."""

    def __init__(self, records: dict[int, Buffer]) -> None:
        self.records = records
        self.built: dict[int, Operand | None] = {}

    def get(self, bid: int) -> Operand | None:
        """The operand of buffer ``bid``; None for a malformed shape or no buffer."""
        if bid in self.built:
            return self.built[bid]
        buf = self.records.get(bid)
        operand = self.built[bid] = buffer_operand(buf) if buf is not None else None
        return operand


def _kinds(records: dict[int, Buffer]) -> dict[int, int]:
    """Buffer id → a small int naming its :func:`operand_kind` (equal kinds, equal ints), for the
    buffers with a well-formed shape."""
    seen: dict[tuple[tuple[int, ...], DType | None], int] = {}
    kinds: dict[int, int] = {}
    for bid, buf in records.items():
        kind = operand_kind(buf)
        if kind is not None:
            kinds[bid] = seen.setdefault(kind, len(seen))
    return kinds


MEMO_MIN_TASKS = 64
"""Programs with fewer tasks are checked task by task: their keys cost more than the rules they
save (a key costs about a third of a GEMV tile's rules, and small programs repeat few keys)."""


def check_memory_safety(
    prog: MegakernelProgram, index: object = None, *, memo: bool | None = None
) -> list[Diagnostic]:
    """M4xx findings for every task whose operands disagree with its opcode's shape rules (spec §7).

    ``index`` (the validator's program index) is accepted for the caller's convenience and not
    needed: buffers are resolved by id here. With ``memo`` the rules run once per
    :func:`rule_key` within this call: a task whose key is that of a task they found nothing wrong
    with is skipped, any other task is checked (so every message names its own task and buffers).
    ``memo=False`` checks every task; the findings are the same. By default (None) the memo is
    used from :data:`MEMO_MIN_TASKS` tasks on.
    """
    tasks = prog.tasks if isinstance(prog.tasks, list) else []
    records = _records(prog.buffers)
    if len(tasks) >= MEMO_MIN_TASKS if memo is None else memo:
        return _check_memoised(tasks, records)
    return _check_each(tasks, records)


def _check_each(tasks: list[Any], records: dict[int, Buffer]) -> list[Diagnostic]:
    """Apply the rules to every task."""
    found: list[Diagnostic] = []
    operands = {bid: buffer_operand(buf) for bid, buf in records.items()}
    for task in tasks:
        ctx = _context(task, operands.get, found)
        if ctx is not None:
            check_op(ctx)
    return found


def _check_memoised(tasks: list[Any], records: dict[int, Buffer]) -> list[Diagnostic]:
    """Apply the rules to every task whose :func:`rule_key` is not that of a clean task before it."""
    found: list[Diagnostic] = []
    operand = _LazyOperands(records).get
    kinds = _kinds(records)
    clean: set[tuple[Any, ...]] = set()
    for task in tasks:
        key = rule_key(task, kinds)
        if key is not None:
            try:
                if key in clean:
                    continue
            except TypeError:  # a param holds a list or dict (FUSED recipes): no memo
                key = None
        ctx = _context(task, operand, found)
        if ctx is None:
            continue
        before = len(found)
        check_op(ctx)
        if key is not None and len(found) == before:
            clean.add(key)
    return found


_SAME_BUFFER = frozenset(op for op, r in OP_RULES.items() if r.same_buffer)


def rule_key(task: Any, kinds: dict[int, int]) -> tuple[Any, ...] | None:
    """What the shape rules of a task depend on, as a key (None: no key; unhashable when a param
    holds a list or dict).

    The rules read the opcode, each operand's shape and dtype (``kinds``, inputs then outputs,
    after the number of inputs), the params by value and type (``True == 1`` but only an int is
    an int32 param) and, for :attr:`OpRules.same_buffer` opcodes, which operands are one buffer;
    the task's id, label and buffer names appear only in messages. A task that
    :func:`_context` skips reports nothing whatever its key, so the key need not judge it.
    """
    try:
        op, inputs, params = task.op, task.inputs, task.params
        ids = inputs + task.outputs
        key = (op, len(inputs), *map(kinds.get, ids), *params.items(), *map(type, params.values()))
        if op in _SAME_BUFFER:
            key += (tuple(map(ids.index, ids)),)
    except (AttributeError, TypeError):
        return None
    return key


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
    ins = [operand(i) if type(i) is int else None for i in inputs]
    outs = [operand(o) if type(o) is int else None for o in outputs]
    if None in ins or None in outs:
        return None
    return OpContext(task, op, ins, outs, params, found)  # type: ignore[arg-type]  # no None left
