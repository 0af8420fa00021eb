"""Normalisation: RMSNORM and LAYERNORM over the last dimension (spec §7)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from amkspec.ir import InstructionKind, default_text, param_default
from amkspec.semantics.edges import nan_rows
from amkspec.semantics.registry import (
    OpError,
    Params,
    Tensor,
    arity,
    f32,
    float_param,
    int_param,
    semantics,
    store,
)

_K = InstructionKind


@semantics(
    _K.RMSNORM, family="Normalisation", inputs="x [rows, H], w [H]", outputs="out (x's shape)",
    params=f"{default_text(_K.RMSNORM, 'eps')}; hidden (required, not read: the last dim is used)",
    shapes="w broadcasts over rows",
    formula="r = rsqrt(mean(x², last dim) + eps); out = (x · r) · w, in float32, then cast; a row whose "
    "mean of squares is not finite is NaN (§7.10)",
)
def rmsnorm(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 RMSNORM (float32; ``x·r`` before ``·w``)."""
    arity(inputs, outputs, _K.RMSNORM, 2, 1)
    x, w = f32(inputs[0]), inputs[1]
    mean_sq = x.pow(2).mean(-1, keepdim=True)
    r = torch.rsqrt(mean_sq + float_param(params, "eps", _K.RMSNORM, param_default(_K.RMSNORM, "eps")))
    try:
        y = nan_rows((x * r) * f32(w), mean_sq)
    except RuntimeError as exc:
        shapes = f"weight w {tuple(w.shape)} does not broadcast over x {tuple(x.shape)}"
        raise OpError(f"RMSNORM: {shapes}") from exc
    store(outputs[0], y)


@semantics(
    _K.LAYERNORM, family="Normalisation", inputs="x [rows, H], w [H], optional b [H]",
    outputs="out (x's shape)", params=f"{default_text(_K.LAYERNORM, 'eps')}; hidden = x's last dim",
    shapes="normalises the trailing ``hidden`` elements",
    formula="out = (x − mean) / sqrt(var + eps) · w (+ b), biased variance, float32, then cast; a row "
    "whose mean or variance is not finite is NaN (§7.10)",
)
def layernorm(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 LAYERNORM (its eps default differs from RMSNORM's: :data:`~amkspec.ir.PARAM_DEFAULTS`)."""
    arity(inputs, outputs, _K.LAYERNORM, 2, 1)
    x = f32(inputs[0])
    if x.dim() == 0:
        raise OpError("LAYERNORM: x must have at least one dimension")
    hidden = int_param(params, "hidden", _K.LAYERNORM, x.shape[-1])
    bias = f32(inputs[2]) if len(inputs) > 2 else None
    try:
        eps = float_param(params, "eps", _K.LAYERNORM, param_default(_K.LAYERNORM, "eps"))
        y = F.layer_norm(x, (hidden,), f32(inputs[1]), bias, eps)
    except RuntimeError as exc:
        raise OpError(f"LAYERNORM: {exc}") from exc
    store(outputs[0], nan_rows(y, _variance(x)))


def _variance(x: Tensor) -> Tensor:
    """The biased variance of each row in float32, as the device accumulates it: two passes,
    ``mean((x − mean)²)`` (NaN when the mean is not finite)."""
    centred = x - x.mean(-1, keepdim=True)
    return (centred * centred).mean(-1, keepdim=True)
