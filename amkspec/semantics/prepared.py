"""Prepared forms of the hottest opcodes (spec §7), for operands that stay put across launches.

``prepare(kind, inputs, outputs, params)`` returns a zero-argument *step* that runs exactly the
torch operations the opcode's reference function (:data:`amkspec.semantics.OP_SEMANTICS`) runs on
those operands: the same kernels on operands of the same dtypes, shapes and strides, so the
results are bit-identical. The operand checks, param parsing and views are done once, here. In
any case that is not the plain one (another dtype, a bias, a quantized weight, a shape that
needs the reshape or broadcast path of ``store``, anything that would raise) it returns None and
the caller runs the reference function, which then computes, or raises, as always.

The steps keep references to the operand tensors: they are valid only while those tensors are
the ones the task reads and writes (the ReferenceVM's launch frame, :mod:`amkspec.vm.frame`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from amkspec.ir import InstructionKind
from amkspec.semantics.linear import QUANT_CODES
from amkspec.semantics.registry import Params, Tensor

Step = Callable[[], None]
_K = InstructionKind
_F32 = torch.float32


def _linear(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """GEMV_TILE/GEMM_TILE without bias or quantization (:func:`amkspec.semantics.linear.linear_tile`)."""
    if len(inputs) != 2 or len(outputs) < 1:
        return None
    x, w_full, out = inputs[0], inputs[1], outputs[0]
    if int(params.get("qdtype", 0)) in QUANT_CODES:
        return None
    n_off = int(params.get("n_off", 0))
    n_tile = int(params.get("N_tile", w_full.shape[0]))
    if x.dtype != _F32 or w_full.dtype != _F32 or w_full.dim() != 2 or x.dim() < 1 or out.dim() < 1:
        return None
    w = w_full[n_off : n_off + n_tile]
    if n_off < 0 or w.shape[0] != n_tile or x.shape[-1] != w.shape[1] or n_off + n_tile > out.shape[-1]:
        return None
    view = out[..., n_off : n_off + n_tile]
    if tuple(view.shape) != (*x.shape[:-1], n_tile):
        return None
    wt = w.T

    def step() -> None:
        view.copy_(x @ wt)

    return step


def _rmsnorm(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """RMSNORM on float32 operands (:func:`amkspec.semantics.norm.rmsnorm`)."""
    if len(inputs) < 2 or len(outputs) < 1:
        return None
    x, w, out = inputs[0], inputs[1], outputs[0]
    if x.dtype != _F32 or w.dtype != _F32 or x.dim() < 1:
        return None
    eps = float(params.get("eps", 1e-6))
    if tuple(out.shape) != tuple(torch.broadcast_shapes(x.shape, w.shape)):
        return None
    rsqrt = torch.rsqrt

    def step() -> None:
        r = rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        out.copy_((x * r) * w)

    return step


def _pair(inputs: list[Tensor], outputs: list[Tensor]) -> tuple[Tensor, Tensor, Tensor] | None:
    """Two float32 inputs broadcast together (as ``elementwise._broadcast``) and an output of their shape."""
    if len(inputs) < 2 or len(outputs) < 1 or inputs[0].dtype != _F32 or inputs[1].dtype != _F32:
        return None
    a, b = torch.broadcast_tensors(inputs[0], inputs[1])
    return (a, b, outputs[0]) if outputs[0].shape == a.shape else None


def _add(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """ADD (:func:`amkspec.semantics.elementwise.add`)."""
    pair = _pair(inputs, outputs)
    if pair is None:
        return None
    a, b, out = pair

    def step() -> None:
        out.copy_(a + b)

    return step


def _silu_mul(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """SILU_MUL (:func:`amkspec.semantics.elementwise.silu_mul`)."""
    pair = _pair(inputs, outputs)
    if pair is None:
        return None
    gate, up, out = pair
    silu = F.silu

    def step() -> None:
        out.copy_(silu(gate) * up)

    return step


_PREPARE: dict[InstructionKind, Callable[[list[Tensor], list[Tensor], Params], Step | None]] = {
    _K.GEMV_TILE: _linear,
    _K.GEMM_TILE: _linear,
    _K.RMSNORM: _rmsnorm,
    _K.ADD: _add,
    _K.SILU_MUL: _silu_mul,
}
"""The opcodes with a prepared form; every other opcode runs its reference function."""


def prepare(
    kind: InstructionKind, inputs: list[Tensor], outputs: list[Tensor], params: Params,
) -> Step | None:
    """The prepared step of one task, or None (see the module doc)."""
    make = _PREPARE.get(kind)
    if make is None:
        return None
    try:
        return make(inputs, outputs, params)
    except Exception:  # noqa: BLE001 - an unusual operand or param: the reference function decides
        return None
