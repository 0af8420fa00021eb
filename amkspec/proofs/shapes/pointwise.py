"""EMBED, the norms, the elementwise ops, SOFTMAX and SAMPLE_ARGMAX (spec §7, chapter 4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from amkspec.ir import DType, InstructionKind, param_default
from amkspec.proofs.shapes import codes as C
from amkspec.proofs.shapes.context import OpContext, Operand, Rule, is_integer_dtype

DEVICE_ELEMENTWISE = frozenset({InstructionKind.COPY, InstructionKind.ADD, InstructionKind.SILU_MUL})
"""Ops a device runs as one loop over ``out.numel`` reading every operand at the same index."""

INDEX_MAX = {DType.I32: 2**31 - 1, DType.I8: 127, DType.U8: 255, DType.I4: 7}
"""Largest index each integer dtype can hold (I4 as a signed nibble)."""

EMBED_RULES = (
    Rule(C.INDEX_DTYPE, "`ids` has an integer dtype"),
    Rule(
        C.EMBED_NUMEL,
        "`table` has rank >= 1; `out.numel == ids.numel * prod(table.shape[1:])` "
        "(the reshape bridge relies on this)",
    ),
)
NORM_RULES = (
    Rule(
        C.NORM_WEIGHT,
        "RMSNORM: `w.numel == w.shape[-1] == x.shape[-1]`; "
        "LAYERNORM: `w` (and `b`) are exactly `[x.shape[-1]]`",
    ),
    Rule(C.HIDDEN_PARAM, "param `hidden` (when given) `== x.shape[-1]` (the device's row length)"),
    Rule(C.NUMEL_MISMATCH, "`out.numel == x.numel` and `out.shape[-1] == x.shape[-1]`"),
)
ELEMENTWISE_RULES = (
    Rule(
        C.BROADCAST,
        "the operands broadcast (torch rules) into `out`: broadcasting them together with "
        "`out` gives exactly `out.shape` (no reshape)",
    ),
)
DEVICE_ELEMENTWISE_RULES = (
    *ELEMENTWISE_RULES,
    Rule(C.DEVICE_NUMEL, "every operand has `out.numel` elements (the device indexes them like out)"),
)
SOFTMAX_RULES = (
    *ELEMENTWISE_RULES,
    Rule(C.SOFTMAX_DIM, "`-max(rank, 1) <= dim < max(rank, 1)` (default -1)"),
)
ARGMAX_RULES = (
    Rule(C.ARGMAX_DTYPE, "`out` has an integer dtype able to hold `logits.shape[-1] - 1`"),
    Rule(C.ARGMAX_SHAPE, "`logits.shape[-1] > 0` and `out.numel == prod(logits.shape[:-1])`"),
)


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The torch broadcast of ``shapes`` (aligned on the right, size-1 dims stretch), or None."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for axis in range(-rank, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def check_elementwise(ctx: OpContext) -> None:
    """Spec §7 COPY/ADD/MUL/SILU_MUL/GELU/ALLREDUCE_SHARD: the result is copied into ``out`` with
    torch broadcasting (``out.copy_``), so it must broadcast to out's shape, never reshape."""
    out = ctx.outputs[0]
    joined = broadcast([*(o.shape for o in ctx.inputs), out.shape])
    if joined != out.shape:
        names = ", ".join(f"{o.name} {list(o.shape)}" for o in ctx.inputs)
        got = "do not broadcast into it" if joined is None else f"broadcast with it to {list(joined)}"
        ctx.fail(
            C.BROADCAST,
            f"writes {out.name} {list(out.shape)} from operands {names}, which {got}",
            [*ctx.inputs, out],
        )
        return
    if ctx.op in DEVICE_ELEMENTWISE:
        for operand in ctx.inputs:
            if operand.numel != out.numel:
                ctx.fail(
                    C.DEVICE_NUMEL,
                    f"reads {out.numel} elements of {operand.name} "
                    f"{list(operand.shape)} which has {operand.numel}",
                    [operand, out],
                )


def check_softmax(ctx: OpContext) -> None:
    """Spec §7 SOFTMAX: elementwise shape rule plus ``dim`` inside the rank."""
    check_elementwise(ctx)
    x = ctx.inputs[0]
    dim, bound = ctx.param("dim", int(param_default(InstructionKind.SOFTMAX, "dim"))), max(x.rank, 1)
    if dim is not None and not -bound <= dim < bound:
        ctx.fail(C.SOFTMAX_DIM, f"takes softmax over dim {dim} of {x.name} {list(x.shape)}", [x])


def check_embed(ctx: OpContext) -> None:
    """Spec §7 EMBED: integer ids; the gathered rows exactly fill ``out``."""
    ids, table, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    check_index_dtype(ctx, ids)
    if table.rank == 0:
        ctx.fail(C.EMBED_NUMEL, f"gathers rows of {table.name}, a rank-0 tensor", [table])
        return
    row = math.prod(table.shape[1:])
    if out.numel != ids.numel * row:
        ctx.fail(
            C.EMBED_NUMEL,
            f"gathers {ids.numel} row(s) of {row} element(s) from {table.name} "
            f"{list(table.shape)} into {out.name} {list(out.shape)} ({out.numel} elements)",
            [ids, table, out],
        )


def check_index_dtype(ctx: OpContext, index: Operand) -> None:
    """M420: EMBED ids and ROPE positions are read from an integer-dtype buffer (spec §7)."""
    if is_integer_dtype(index.dtype) is False:
        dtype = index.dtype.name if index.dtype is not None else "?"
        ctx.fail(C.INDEX_DTYPE, f"reads indices from {index.name} of dtype {dtype}", [index])


def check_norm(ctx: OpContext) -> None:
    """Spec §7 RMSNORM/LAYERNORM: per-row normalisation over the last dim."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.numel != x.numel or out.shape[-1:] != x.shape[-1:]:
        ctx.fail(
            C.NUMEL_MISMATCH,
            f"normalises {x.name} {list(x.shape)} into {out.name} "
            f"{list(out.shape)}, which does not have its elements and row length",
            [x, out],
        )
    if x.rank == 0:
        ctx.fail(C.NORM_WEIGHT, f"normalises {x.name}, a rank-0 tensor with no row", [x])
        return
    width = x.shape[-1]
    hidden = ctx.param("hidden")
    if hidden is not None and hidden != width:
        ctx.fail(C.HIDDEN_PARAM, f"has hidden = {hidden} but rows of {x.name} have {width} elements", [x])
    strict = ctx.op is InstructionKind.LAYERNORM
    for w in ctx.inputs[1:]:
        ok = w.shape == (width,) if strict else (w.rank >= 1 and w.shape[-1] == width == w.numel)
        if not ok:
            ctx.fail(C.NORM_WEIGHT, f"scales rows of {width} elements by {w.name} {list(w.shape)}", [w, x])


def check_argmax(ctx: OpContext) -> None:
    """Spec §7 SAMPLE_ARGMAX: one integer index per row of logits."""
    logits, out = ctx.inputs[0], ctx.outputs[0]
    width = logits.shape[-1] if logits.rank else 0
    if width == 0 or out.numel != logits.rows:
        ctx.fail(
            C.ARGMAX_SHAPE,
            f"writes the argmax of {logits.rows if width else 0} row(s) of "
            f"{logits.name} {list(logits.shape)} into {out.name} {list(out.shape)}",
            [logits, out],
        )
    if out.dtype is None:
        return
    top = INDEX_MAX.get(out.dtype, -1)
    if top < width - 1 or top < 0:
        ctx.fail(
            C.ARGMAX_DTYPE,
            f"writes indices up to {max(width - 1, 0)} into {out.name} of dtype {out.dtype.name}",
            [out],
        )
