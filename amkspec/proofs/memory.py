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

from typing import Any

from amkspec.ir import Buffer, InstructionKind, MegakernelProgram, Task
from amkspec.proofs.diagnostics import Diagnostic
from amkspec.proofs.shapes.context import OpContext, Operand, Rule, buffer_operand
from amkspec.proofs.shapes.registry import OP_RULES, arity_ok, check_op

SHAPE_RULES: dict[InstructionKind, tuple[Rule, ...]] = {op: r.rules for op, r in OP_RULES.items()}
"""Each opcode's shape/dtype rules as ``Rule(code, text)``, in the order they are checked."""


def _operands(buffers: Any) -> dict[int, Operand | None]:
    """Buffer id → operand (None for a malformed shape); first occurrence wins for duplicate ids."""
    table: dict[int, Operand | None] = {}
    for buf in buffers if isinstance(buffers, list) else []:
        if isinstance(buf, Buffer) and type(buf.id) is int and buf.id not in table:
            table[buf.id] = buffer_operand(buf)
    return table


def check_memory_safety(prog: MegakernelProgram, index: object = None) -> list[Diagnostic]:
    """M4xx findings for every task whose operands disagree with its opcode's shape rules (spec §7).

    ``index`` (the validator's program index) is accepted for the caller's convenience and not
    needed: buffers are resolved by id here.
    """
    found: list[Diagnostic] = []
    table = _operands(prog.buffers)
    for task in prog.tasks if isinstance(prog.tasks, list) else []:
        ctx = _context(task, table, found)
        if ctx is not None:
            check_op(ctx)
    return found


def _context(task: Any, table: dict[int, Operand | None], found: list[Diagnostic]) -> OpContext | None:
    """The op application of a task, or None when the structure checks must judge it first."""
    if not isinstance(task, Task):
        return None
    op, inputs, outputs, params = task.op, task.inputs, task.outputs, task.params
    if not (isinstance(op, InstructionKind) and isinstance(inputs, list) and isinstance(outputs, list)):
        return None
    if not isinstance(params, dict) or not arity_ok(op, len(inputs), len(outputs)):
        return None
    ins = [table.get(i) if type(i) is int else None for i in inputs]
    outs = [table.get(o) if type(o) is int else None for o in outputs]
    if None in ins or None in outs:
        return None
    return OpContext(task, op, ins, outs, params, found)  # type: ignore[arg-type]  # no None left
