"""What a shape rule sees: operands, params and where to report (spec §7).

Rules work on :class:`Operand` views rather than on buffers so that the same
rule checks a task's buffers and a FUSED recipe step's scratch tensors. An
operand only exists for a well-formed shape (non-negative ints); anything
else is for the structure checks to report, and the op is skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from amkspec.ir import Buffer, DType, InstructionKind, Task
from amkspec.ir.enums import INTEGER_DTYPES
from amkspec.ir.opcodes import INT32_MAX, INT32_MIN
from amkspec.ir.shapes import is_shape
from amkspec.proofs.diagnostics import Diagnostic, diag


class Operand:
    """A tensor a task reads or writes: its shape, dtype (None if unknown) and name for messages.

    ``rank``, ``numel`` and ``rows`` (the number of rows when viewed as ``[-1, shape[-1]]``, 1 for
    rank 0 or 1) are computed once: an operand is built once per buffer and read by many tasks.
    The name of a buffer's operand (:func:`buffer_operand`) is written on first use (only messages
    read it). Operands compare by identity.
    """

    __slots__ = ("_name", "_record", "buffer", "dtype", "numel", "rank", "rows", "shape")

    def __init__(
        self,
        name: str | None,
        shape: tuple[int, ...],
        dtype: DType | None,
        buffer: int | None = None,
        record: Buffer | None = None,
    ) -> None:
        self._name = name
        self._record = record
        self.shape = shape
        self.dtype = dtype
        self.buffer = buffer
        self.rank = len(shape)
        self.numel = math.prod(shape)
        self.rows = math.prod(shape[:-1])

    @property
    def name(self) -> str:
        """``"buffer {id}:{name}"`` for a buffer's operand (``?`` for a name that is not a str)."""
        name = self._name
        if name is None:
            buf_id, label = getattr(self._record, "id", None), getattr(self._record, "name", None)
            name = self._name = f"buffer {buf_id}:{label if isinstance(label, str) else '?'}"
        return name

    def __repr__(self) -> str:
        return f"Operand({self.name!r}, {self.shape!r}, {self.dtype!r})"


def operand_kind(buf: Buffer) -> tuple[tuple[int, ...], DType | None] | None:
    """What the rules read of a buffer, ``(shape, dtype)`` (dtype None when unknown), or None when
    its shape is malformed."""
    shape = buf.shape
    if not is_shape(shape):
        return None
    return shape, buf.dtype if isinstance(buf.dtype, DType) else None


def buffer_operand(buf: Buffer, well_formed: bool = False) -> Operand | None:
    """The operand view of a buffer, or None when its shape is malformed. ``well_formed``: the
    caller knows the record is (:attr:`~amkspec.proofs.index.ProgramIndex.buffers_well_formed`:
    its shape is a tuple of non-negative ints and its dtype a DType, so its kind is both)."""
    dtype: DType | None
    if well_formed:
        shape, dtype = buf.shape, buf.dtype
    else:
        kind = operand_kind(buf)
        if kind is None:
            return None
        shape, dtype = kind
    buf_id = buf.id
    return Operand(None, shape, dtype, buf_id if type(buf_id) is int else None, buf)


def int_param(params: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    """An int32 param, ``default`` when absent, None when present but not an int32."""
    if key not in params:
        return default
    value = params[key]
    if type(value) is int and INT32_MIN <= value <= INT32_MAX:
        return value
    return None


def is_integer_dtype(dtype: DType | None) -> bool | None:
    """True/False for a known dtype (in ``INTEGER_DTYPES``), None when unknown."""
    return None if dtype is None else dtype in INTEGER_DTYPES


@attrs.define
class OpContext:
    """One op application: the task (or one of its recipe steps) being checked and its operands."""

    task: Task
    op: InstructionKind
    inputs: list[Operand]
    outputs: list[Operand]
    params: Mapping[str, Any]
    found: list[Diagnostic]
    step: str = ""
    """Where inside the task, e.g. ``" recipe step 2 (ADD)"``; empty for the task itself."""

    @property
    def where(self) -> str:
        """``task id:label`` plus the step, as messages start (built only when reporting)."""
        return f"task {self.task.describe()}{self.step}"

    def param(self, key: str, default: int | None = None) -> int | None:
        """See :func:`int_param`."""
        return int_param(self.params, key, default)

    def span(
        self,
        code: str,
        params: tuple[str, str],
        default: int | None,
        limit: int,
        least: int,
        message: Callable[[int, int], str],
        operand: Operand,
    ) -> tuple[int, int] | None:
        """The tile or window ``[start, end)`` that ``params`` (start, default 0; length, default
        ``default``) name (spec §7), when it lies in ``[0, limit)`` with at least ``least``
        elements; else None, with ``code`` and ``message(start, end)`` recorded when both are int32."""
        start, count = self.param(params[0], 0), self.param(params[1], default)
        if start is None or count is None:
            return None
        end = start + count
        if start < 0 or count < least or end > limit:
            self.fail(code, message(start, end), [operand])
            return None
        return start, end

    def fail(self, code: str, message: str, operands: Iterable[Operand] = ()) -> None:
        """Record a finding ``"<where> <message>"`` naming the task and the buffers involved."""
        buffers = [o.buffer for o in operands if o.buffer is not None]
        self.found.append(diag(code, f"{self.where} {message}", tasks=[self.task.id], buffers=buffers))


Checker = Callable[[OpContext], None]
"""A shape rule set for one opcode family; arity is already known to be right."""


@attrs.frozen
class Rule:
    """A human-readable statement of one rule of an opcode, with the code that enforces it."""

    code: str
    text: str
