"""Opcode → shape rules: the checker that enforces them and their statement for the docs (spec §7)."""

from __future__ import annotations

import sys

import attrs

from amkspec.ir import InstructionKind
from amkspec.ir.opcodes import OP_REGISTRY, VARIADIC, OpSpec
from amkspec.proofs.shapes import attention, fused, linear, pointwise
from amkspec.proofs.shapes.context import Checker, OpContext, Rule


@attrs.frozen
class OpRules:
    """The rules of one opcode: ``check`` enforces ``rules``. ``same_buffer``: whether ``check``
    compares operands' buffer ids (otherwise it reads only their shapes, dtypes and names)."""

    check: Checker
    rules: tuple[Rule, ...]
    same_buffer: bool = False


def _nothing(ctx: OpContext) -> None:
    """NOP reads and writes nothing."""


def _fused(ctx: OpContext) -> None:
    fused.check_fused(ctx, check_op)


_K = InstructionKind
OP_RULES: dict[InstructionKind, OpRules] = {
    _K.NOP: OpRules(_nothing, ()),
    _K.COPY: OpRules(pointwise.check_elementwise, pointwise.DEVICE_ELEMENTWISE_RULES),
    _K.EMBED: OpRules(pointwise.check_embed, pointwise.EMBED_RULES),
    _K.RMSNORM: OpRules(pointwise.check_norm, pointwise.NORM_RULES),
    _K.LAYERNORM: OpRules(pointwise.check_norm, pointwise.NORM_RULES),
    _K.GEMV_TILE: OpRules(linear.check_matmul, linear.MATMUL_RULES),
    _K.GEMM_TILE: OpRules(linear.check_matmul, linear.MATMUL_RULES),
    _K.ATTENTION_TILE: OpRules(attention.check_attention, attention.ATTENTION_RULES),
    _K.ROPE: OpRules(attention.check_rope, attention.ROPE_RULES),
    _K.SILU_MUL: OpRules(pointwise.check_elementwise, pointwise.DEVICE_ELEMENTWISE_RULES),
    _K.GELU: OpRules(pointwise.check_elementwise, pointwise.ELEMENTWISE_RULES),
    _K.ADD: OpRules(pointwise.check_elementwise, pointwise.DEVICE_ELEMENTWISE_RULES),
    _K.MUL: OpRules(pointwise.check_elementwise, pointwise.ELEMENTWISE_RULES),
    _K.DEQUANT: OpRules(linear.check_dequant, linear.DEQUANT_RULES),
    _K.SOFTMAX: OpRules(pointwise.check_softmax, pointwise.SOFTMAX_RULES),
    _K.ALLREDUCE_SHARD: OpRules(pointwise.check_elementwise, pointwise.ELEMENTWISE_RULES),
    _K.KV_APPEND: OpRules(attention.check_kv_append, attention.KV_APPEND_RULES, same_buffer=True),
    _K.SAMPLE_ARGMAX: OpRules(pointwise.check_argmax, pointwise.ARGMAX_RULES),
    _K.ATTENTION_COMBINE: OpRules(attention.check_combine, attention.COMBINE_RULES),
    _K.FUSED: OpRules(_fused, fused.FUSED_RULES, same_buffer=True),
}


def _counts(spec: OpSpec) -> tuple[range, range]:
    """The input and output counts OP_REGISTRY allows for an opcode."""
    most = sys.maxsize
    inputs = range(spec.min_inputs, most if spec.max_inputs == VARIADIC else spec.max_inputs + 1)
    outputs = range(0, most) if spec.n_outputs == VARIADIC else range(spec.n_outputs, spec.n_outputs + 1)
    return inputs, outputs


_COUNTS = {op: _counts(spec) for op, spec in OP_REGISTRY.items()}


def arity_ok(op: InstructionKind, n_inputs: int, n_outputs: int) -> bool:
    """Whether the counts match OP_REGISTRY (the structure checks report them when not)."""
    counts = _COUNTS.get(op)
    return counts is not None and n_inputs in counts[0] and n_outputs in counts[1]


def check_op(ctx: OpContext) -> None:
    """Apply the rules of ``ctx.op``; the caller has checked arity and resolved every operand."""
    OP_RULES[ctx.op].check(ctx)
