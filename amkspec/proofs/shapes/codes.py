"""The M4xx diagnostic codes: one per shape/dtype rule (spec §3.4 and chapter 4, memory safety).

Each rule guards a way a task could make a VM read or write outside a buffer,
or compute from elements that do not mean what the opcode assumes.
"""

from __future__ import annotations

from amkspec.proofs.diagnostics import Family, Severity, register


def _m(code: str, summary: str) -> str:
    return register(code, Family.MEMORY, Severity.ERROR, summary)


# GEMV_TILE / GEMM_TILE / DEQUANT
TILE_OUTSIDE_OUTPUT = _m(
    "M401", "GEMV/GEMM tile outside the output (n_off < 0, N_tile <= 0, past the last dim)"
)
TILE_OUTSIDE_WEIGHT = _m("M402", "GEMV/GEMM tile rows n_off..n_off+N_tile-1 not inside the weight")
WEIGHT_LAYOUT = _m("M403", "weight is not [N, K] with K equal to x's last dim")
K_PARAM = _m("M404", "param K differs from the reduction length x.shape[-1]")
BIAS_LENGTH = _m("M405", "bias is not 1-D with at least n_off+N_tile entries")
ROW_MISMATCH = _m("M406", "x and the output disagree on the number of rows")
PACKED_DTYPE = _m("M407", "quantized weight dtype does not match qdtype (I8 for 6, I4 for 7)")
SCALES_SHAPE = _m("M408", "scales/zeros shape does not match the quantization groups")
GROUP_NOT_POSITIVE = _m("M409", "quantization group is not positive")
GROUP_NOT_DIVIDING = _m("M410", "DEQUANT last dim is not a multiple of group")
QUANT_WITHOUT_SCALES = _m("M411", "qdtype 6/7 on a GEMV/GEMM with no scales input")
INTEGER_FP_WEIGHT = _m("M412", "floating-point GEMV/GEMM over an integer (quantized) weight")
AFFINE_MISUSE = _m(
    "M413", "flags AFFINE (extension) on a GEMV/GEMM that is not quantized, or on a DEQUANT with zero points"
)

# EMBED, norms, elementwise, SOFTMAX, SAMPLE_ARGMAX
INDEX_DTYPE = _m("M420", "index buffer (EMBED ids, ROPE positions) is not of an integer dtype")
EMBED_NUMEL = _m("M421", "EMBED output numel differs from len(ids) times the table row length")
NORM_WEIGHT = _m("M422", "norm weight/bias length differs from the row length x.shape[-1]")
HIDDEN_PARAM = _m("M423", "param hidden differs from the row length x.shape[-1]")
NUMEL_MISMATCH = _m("M424", "output numel differs from the input numel of a shape-preserving op")
BROADCAST = _m("M425", "operands do not broadcast into the output shape (torch rules, no reshape)")
DEVICE_NUMEL = _m("M426", "operand numel differs from the output numel of a device elementwise op")
SOFTMAX_DIM = _m("M427", "SOFTMAX dim out of range for the input rank")
ARGMAX_DTYPE = _m("M428", "SAMPLE_ARGMAX output dtype cannot hold every index of the last dim")
ARGMAX_SHAPE = _m("M429", "SAMPLE_ARGMAX output numel differs from the number of logits rows")

# ATTENTION_TILE, ATTENTION_COMBINE, ROPE, KV_APPEND
QUERY_LAYOUT = _m("M430", "attention q is not [n_heads, head_dim] or [B, n_heads, head_dim]")
CACHE_LAYOUT = _m("M431", "KV caches are not [max_seq, n_kv_heads, head_dim] (or [B, ...] for batched q)")
HEADS_DIVIDE = _m("M432", "n_heads is not a positive multiple of n_kv_heads")
WINDOW_OUTSIDE_CACHE = _m("M433", "attention window [kv_start, kv_start+kv_len) not inside the cache")
ATTENTION_OUT_NUMEL = _m("M434", "attention output numel differs from what the op writes")
PARTIAL_SHAPE = _m("M435", "ATTENTION_COMBINE partial is not [n_heads, head_dim+2]")
COMBINE_HEAD_DIM = _m("M436", "ATTENTION_COMBINE without a positive head_dim")
ROPE_LAYOUT = _m("M437", "ROPE input is not rank 2/3 with last dim == head_dim (even, positive)")
ROPE_POSITIONS = _m("M438", "ROPE positions count does not match the rows of x")
KV_ROWS = _m("M439", "KV_APPEND rows pos..pos+n-1 not inside the cache")
KV_NEW_SHAPE = _m("M440", "KV_APPEND new values do not match the cache row shape")
KV_NOT_IN_PLACE = _m("M441", "KV_APPEND input[1] is not the cache it writes (outputs[0])")

# FUSED recipes (spec §7.8)
RECIPE_FORM = _m(
    "M450", "FUSED recipe malformed (not a dict, no steps, bad out/out_shape/out_dtype, no final)"
)
RECIPE_STEP_OP = _m("M451", "FUSED recipe step op invalid (unknown, NOP, nested FUSED, wrong arity)")
RECIPE_ARG_REF = _m("M452", "FUSED recipe arg is not {in: k < n_inputs} or {s: earlier scratch}")
RECIPE_STEP_PARAMS = _m("M453", "FUSED recipe step params missing, unknown-typed or not a dict")
DEVICE_PATTERN = _m("M454", "FUSED device pattern GEMV_ADD without [x, W, residual] of matching shapes")
