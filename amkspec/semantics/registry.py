"""The opcode → reference-numerics registry and its machine-readable description (spec §7).

Every opcode function has the signature ``fn(inputs, outputs, params) -> None``:
``inputs``/``outputs`` are the bound tensors of the task's buffer ids in the
task's order, and the function writes **into** ``outputs`` in place (spec §7).
Each registration also records the operands, params (with defaults), shapes and
formula as text; the spec site's §7 tables are generated from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import torch

from amkspec.ir import AmkspecError, InstructionKind
from amkspec.semantics.edges import copy_into

Tensor = torch.Tensor
Params = Mapping[str, Any]
OpFn = Callable[[list[Tensor], list[Tensor], Params], None]


class OpError(AmkspecError, ValueError):
    """An opcode cannot run on these operands or params (a missing param, an id out of range…).

    Every registered function raises only this for bad operands or params: the checks name the
    operand, and :func:`semantics` turns any other error a torch call raises into an ``OpError``
    naming the opcode (the torch error chained as its cause)."""


_TORCH_ERRORS = (RuntimeError, LookupError, ValueError, TypeError, ArithmeticError)
"""What torch and Python raise on operands they cannot use (shapes, indices, conversions)."""


@attrs.frozen
class OpSemantics:
    """One opcode's reference function and its description for the spec tables (spec §7)."""

    kind: InstructionKind
    fn: OpFn
    family: str
    inputs: str
    outputs: str
    params: str
    shapes: str
    formula: str


FAMILIES = (
    "Data movement", "Normalisation", "Linear", "Attention", "Elementwise", "Quantization",
    "Sampling", "Composite",
)
"""The op families, in the order the spec's §7 tables list them."""

SEMANTICS: dict[InstructionKind, OpSemantics] = {}
"""Opcode → its registered semantics, filled when :mod:`amkspec.semantics` is imported."""


def semantics(
    kind: InstructionKind, *, family: str, inputs: str, outputs: str, params: str, shapes: str,
    formula: str,
) -> Callable[[OpFn], OpFn]:
    """Register ``fn`` as the reference numerics of ``kind`` (one function per opcode); the
    registry holds it wrapped so that it raises only :class:`OpError` on bad operands."""
    if family not in FAMILIES:
        raise ValueError(f"unknown op family {family!r}")

    def register(fn: OpFn) -> OpFn:
        if kind in SEMANTICS:
            raise ValueError(f"{kind.name} registered twice")
        checked = _op_errors(kind, fn)
        SEMANTICS[kind] = OpSemantics(kind, checked, family, inputs, outputs, params, shapes, formula)
        return fn

    return register


def _op_errors(kind: InstructionKind, fn: OpFn) -> OpFn:
    """``fn`` with every error a bad operand can raise reported as an :class:`OpError`."""

    @functools.wraps(fn)
    def checked(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
        try:
            fn(inputs, outputs, params)
        except OpError:
            raise
        except _TORCH_ERRORS as exc:
            raise OpError(f"{kind.name}: {exc}") from exc

    return checked


def f32(t: Tensor) -> Tensor:
    """``t`` as float32 (a no-op for float32 tensors)."""
    return t.float()


def store(out: Tensor, value: Tensor) -> None:
    """Write ``value`` into ``out`` cast to its dtype (:func:`~amkspec.semantics.edges.cast`),
    reshaping when only the layout differs."""
    if value.shape != out.shape and value.numel() == out.numel():
        value = value.reshape(out.shape)
    try:
        copy_into(out, value)
    except RuntimeError as exc:
        raise OpError(f"cannot write a {tuple(value.shape)} result into a {tuple(out.shape)} output") from exc


def need(params: Params, key: str, kind: InstructionKind) -> Any:
    """A param the reference numerics cannot do without (the original raised ``KeyError``)."""
    if key not in params:
        raise OpError(f"{kind.name} needs param {key!r}")
    return params[key]


def int_param(params: Params, key: str, kind: InstructionKind, default: int | None = None) -> int:
    """Param ``key`` converted by ``int()``; ``default`` when absent (None: the param is required)."""
    value = need(params, key, kind) if default is None else params.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OpError(f"{kind.name}: param {key!r} must be an integer, got {value!r}") from exc


def float_param(params: Params, key: str, kind: InstructionKind, default: float) -> float:
    """Param ``key`` converted by ``float()``; ``default`` when absent."""
    value = params.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OpError(f"{kind.name}: param {key!r} must be a number, got {value!r}") from exc


def arity(inputs: list[Tensor], outputs: list[Tensor], kind: InstructionKind, n_in: int, n_out: int) -> None:
    """Fail cleanly when a task gives fewer operands than the function reads."""
    if len(inputs) < n_in or len(outputs) < n_out:
        raise OpError(
            f"{kind.name} needs {n_in} input(s) and {n_out} output(s), got {len(inputs)} and {len(outputs)}"
        )
