"""Memory safety: every task's operands have the shapes and dtypes its opcode assumes (spec §7).

This obligation family goes beyond the original implementation (DESIGN.md "Proof
obligations"): for every opcode the shapes and dtypes of a task's inputs and
outputs are derived from its semantics (OPS_FACTS §3) and params, and a task
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


class _Operands:
    """Buffer id → operand, built lazily; first occurrence wins for duplicate ids."""

    def __init__(self, buffers: list[Buffer]) -> None:
        self._buffers: dict[Any, Buffer] = {}
        for buf in buffers:
            if isinstance(buf, Buffer) and _is_id(buf.id):
                self._buffers.setdefault(buf.id, buf)
        self._cache: dict[Any, Operand | None] = {}

    def get(self, buf_id: Any) -> Operand | None:
        if not _is_id(buf_id):
            return None
        if buf_id not in self._cache:
            buf = self._buffers.get(buf_id)
            self._cache[buf_id] = None if buf is None else buffer_operand(buf)
        return self._cache[buf_id]


def _is_id(value: Any) -> bool:
    return type(value) is int


def check_memory_safety(prog: MegakernelProgram, index: object = None) -> list[Diagnostic]:
    """M4xx findings for every task whose operands disagree with its opcode's shape rules.

    ``index`` (the validator's program index) is accepted for the caller's convenience and not
    needed: buffers are resolved by id here.
    """
    found: list[Diagnostic] = []
    operands = _Operands(prog.buffers if isinstance(prog.buffers, list) else [])
    for task in prog.tasks if isinstance(prog.tasks, list) else []:
        ctx = _context(task, operands, found)
        if ctx is not None:
            check_op(ctx)
    return found


def _context(task: Any, operands: _Operands, found: list[Diagnostic]) -> OpContext | None:
    """The op application of a task, or None when the structure checks must judge it first."""
    if not isinstance(task, Task) or not isinstance(task.op, InstructionKind):
        return None
    if not isinstance(task.inputs, list) or not isinstance(task.outputs, list):
        return None
    if not isinstance(task.params, dict) or not arity_ok(task.op, len(task.inputs), len(task.outputs)):
        return None
    ins = [operands.get(i) for i in task.inputs]
    outs = [operands.get(o) for o in task.outputs]
    if any(o is None for o in ins) or any(o is None for o in outs):
        return None
    where = f"task {task.describe()}"
    return OpContext(task, task.op, [o for o in ins if o], [o for o in outs if o], task.params, where, found)
