"""Elementwise ops and reductions across inputs: SILU_MUL, GELU, ADD, MUL, SOFTMAX,
ALLREDUCE_SHARD, and SAMPLE_ARGMAX (spec §7). All compute in float32 and cast once."""

from __future__ import annotations

import torch

from amkspec.ir import OP_REGISTRY, InstructionKind, default_text, param_default
from amkspec.semantics import edges
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


def _broadcast(op: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    try:
        x, y = torch.broadcast_tensors(f32(a), f32(b))
    except RuntimeError as exc:
        raise OpError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from exc
    return x, y


@semantics(
    _K.SILU_MUL, family="Elementwise", inputs="gate, up", outputs="out", params="—",
    shapes="gate and up broadcast",
    formula="out = silu(gate) · up, silu(g) = g · sigmoid(g); silu(+inf) = +inf, silu(−inf) = 0 (§7.10)",
)
def silu_mul(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 SILU_MUL (SwiGLU)."""
    arity(inputs, outputs, _K.SILU_MUL, 2, 1)
    gate, up = _broadcast("SILU_MUL", inputs[0], inputs[1])
    store(outputs[0], edges.silu(gate) * up)


@semantics(
    _K.GELU, family="Elementwise", inputs="x", outputs="out", params="—", shapes="out has x's elements",
    formula="out = x · Φ(x) (exact erf form, not the tanh approximation); GELU(+inf) = +inf, "
    "GELU(−inf) = 0 (§7.10)",
)
def gelu(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 GELU, exact erf form."""
    arity(inputs, outputs, _K.GELU, 1, 1)
    store(outputs[0], edges.gelu(f32(inputs[0])))


@semantics(
    _K.ADD, family="Elementwise", inputs="a, b", outputs="out", params="—", shapes="a and b broadcast",
    formula="out = a + b",
)
def add(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 ADD (the residual add)."""
    arity(inputs, outputs, _K.ADD, 2, 1)
    a, b = _broadcast("ADD", inputs[0], inputs[1])
    store(outputs[0], a + b)


@semantics(
    _K.MUL, family="Elementwise", inputs="a, optional b", outputs="out",
    params=f"{default_text(_K.MUL, 'scale')} (one input)",
    shapes="a and b broadcast", formula="out = a · b, or a · scale with one input",
)
def mul(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 MUL: elementwise product, or scaling by ``scale`` with one input."""
    arity(inputs, outputs, _K.MUL, 1, 1)
    if len(inputs) > 1:
        a, b = _broadcast("MUL", inputs[0], inputs[1])
        store(outputs[0], a * b)
    else:
        scale = float_param(params, "scale", _K.MUL, param_default(_K.MUL, "scale"))
        store(outputs[0], f32(inputs[0]) * scale)


@semantics(
    _K.SOFTMAX, family="Elementwise", inputs="x", outputs="out", params=default_text(_K.SOFTMAX, "dim"),
    shapes="out has x's elements",
    formula="out = exp(x − max) / Σ exp(x − max) along dim; a line holding NaN or +inf, or all −inf, "
    "is NaN (§7.10)",
)
def softmax(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 SOFTMAX along ``dim``."""
    arity(inputs, outputs, _K.SOFTMAX, 1, 1)
    x = f32(inputs[0])
    dim = int_param(params, "dim", _K.SOFTMAX, int(param_default(_K.SOFTMAX, "dim")))
    if not -max(x.dim(), 1) <= dim < max(x.dim(), 1):
        raise OpError(f"SOFTMAX: dim {dim} out of range for shape {tuple(x.shape)}")
    store(outputs[0], edges.softmax(x, dim))


@semantics(
    _K.ALLREDUCE_SHARD, family="Elementwise", inputs=f"{OP_REGISTRY[_K.ALLREDUCE_SHARD].input_range} shards",
    outputs="out", params="—",
    shapes="shards broadcast", formula="out = ((s₀ + s₁) + s₂) + … in input order",
)
def allreduce_shard(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 ALLREDUCE_SHARD: the single-node stand-in for a cross-GPU sum."""
    arity(inputs, outputs, _K.ALLREDUCE_SHARD, 1, 1)
    acc = f32(inputs[0])
    for shard in inputs[1:]:
        acc, other = _broadcast("ALLREDUCE_SHARD", acc, shard)
        acc = acc + other
    store(outputs[0], acc)


@semantics(
    _K.SAMPLE_ARGMAX, family="Sampling", inputs="logits [rows, V]", outputs="out [rows] (I32)",
    params="—", shapes="one index per row", formula="out = argmax over the last dim (ties: lowest index)",
)
def sample_argmax(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 SAMPLE_ARGMAX: greedy sampling, converted to the output's dtype."""
    arity(inputs, outputs, _K.SAMPLE_ARGMAX, 1, 1)
    logits = f32(inputs[0])
    if logits.numel() == 0:
        raise OpError("SAMPLE_ARGMAX: empty logits")
    store(outputs[0], torch.argmax(logits, dim=-1))
