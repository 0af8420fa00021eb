"""Opcode registry and param fields (spec §7, §8).

``OP_REGISTRY`` pins each opcode's arity and required params; ``PARAM_FIELDS``
lists every scalar param that marshals into ``amk_params_t`` with its type code
(``'i'`` int32, ``'f'`` float32); ``PARAM_LAYOUT`` gives the binary struct order.
"""

from __future__ import annotations

import re

import attrs

from amkspec.ir.enums import ABI_MAX_INPUTS, DType, InstructionKind

RECIPE_DTYPES: dict[str, DType | None] = {
    "float32": DType.F32,
    "float16": DType.F16,
    "bfloat16": DType.BF16,
    "float64": None,
    "int8": DType.I8,
    "int32": DType.I32,
}
"""The ``out_dtype`` names a FUSED recipe step may give its scratch (spec §7), with their IR dtype;
``float64`` is a scratch-only dtype (None: no IR buffer has it)."""

VARIADIC = -1
"""``max_inputs``/``n_outputs`` value meaning "variable" (still capped by the ABI)."""


@attrs.frozen
class OpSpec:
    """Arity and required params of one opcode (spec §7)."""

    kind: InstructionKind
    min_inputs: int
    max_inputs: int
    n_outputs: int
    required_params: tuple[str, ...]
    note: str = ""

    @property
    def input_range(self) -> str:
        """``lo..hi`` inputs as the spec's tables print them, a variadic count capped by the ABI (§7, §8)."""
        return f"{self.min_inputs}..{ABI_MAX_INPUTS if self.max_inputs == VARIADIC else self.max_inputs}"


def _spec(kind: InstructionKind, lo: int, hi: int, n_out: int, req: str, note: str) -> OpSpec:
    return OpSpec(kind, lo, hi, n_out, tuple(req.split()), note)


_K = InstructionKind
OP_REGISTRY: dict[InstructionKind, OpSpec] = {
    s.kind: s
    for s in (
        _spec(_K.NOP, 0, 0, 0, "", "no-op"),
        _spec(_K.COPY, 1, 1, 1, "", "page-to-page move"),
        _spec(_K.EMBED, 2, 2, 1, "hidden", "[ids, table[V,H]] -> gathered rows"),
        _spec(_K.RMSNORM, 2, 2, 1, "eps hidden", "x*rsqrt(mean(x^2)+eps)*w"),
        _spec(_K.LAYERNORM, 2, 3, 1, "eps hidden", "LayerNorm(x, w[, b])"),
        _spec(_K.GEMV_TILE, 2, 3, 1, "K N_tile n_off", "out[..,n_off:n_off+N_tile] = x @ W[n_off:..].T"),
        _spec(_K.GEMM_TILE, 2, 3, 1, "M_tile K N_tile n_off", "tiled GEMM (prefill/batch)"),
        _spec(
            _K.ATTENTION_TILE, 3, 4, 1, "head_dim kv_start kv_len scale n_heads n_kv_heads",
            "GQA attention over a KV window",
        ),
        _spec(_K.ROPE, 2, 2, 1, "head_dim theta", "Llama rotate-half rotary embedding"),
        _spec(_K.SILU_MUL, 2, 2, 1, "", "SwiGLU silu(gate)*up"),
        _spec(_K.GELU, 1, 1, 1, "", "GELU (exact erf)"),
        _spec(_K.ADD, 2, 2, 1, "", "residual add"),
        _spec(_K.MUL, 1, 2, 1, "", "elementwise product or scale"),
        _spec(_K.DEQUANT, 2, 3, 1, "qdtype group", "int4/int8 levels + scales -> fp"),
        _spec(_K.SOFTMAX, 1, 1, 1, "", "softmax over dim"),
        _spec(_K.ALLREDUCE_SHARD, 1, ABI_MAX_INPUTS, 1, "", "shard reduce (sum of inputs)"),
        _spec(_K.KV_APPEND, 2, 2, 1, "pos", "append new k/v into the KV cache at pos"),
        _spec(_K.SAMPLE_ARGMAX, 1, 1, 1, "", "greedy logits -> next token"),
        _spec(_K.ATTENTION_COMBINE, 2, ABI_MAX_INPUTS, 1, "", "merge flash-decoding partials (acc, m, l)"),
        _spec(_K.FUSED, 1, VARIADIC, 1, "recipe", "a recipe of primitive steps"),
    )
}

PARAM_FIELDS: dict[str, str] = {
    "K": "i", "N": "i", "M": "i", "N_tile": "i", "M_tile": "i", "n_off": "i", "m_off": "i",
    "hidden": "i", "vocab": "i", "head_dim": "i", "n_heads": "i", "n_kv_heads": "i",
    "kv_start": "i", "kv_len": "i", "pos": "i", "qdtype": "i", "flags": "i", "group": "i",
    "dim": "i", "eps": "f", "scale": "f", "theta": "f",
}
"""Scalar params known to the ABI and their type: ``'i'`` int32, ``'f'`` float32."""

PARAM_LAYOUT: tuple[str, ...] = (
    "K", "N", "M", "N_tile", "M_tile", "n_off", "m_off", "hidden", "vocab", "head_dim",
    "n_heads", "n_kv_heads", "kv_start", "kv_len", "pos", "qdtype", "group", "flags", "dim",
    "eps", "scale", "theta",
)
"""Field order of ``amk_params_t`` (4 bytes each; 88 bytes in all)."""

PARAM_DEFAULTS: dict[InstructionKind, dict[str, float]] = {
    _K.RMSNORM: {"eps": 1e-6},
    _K.LAYERNORM: {"eps": 1e-5},
    _K.ROPE: {"theta": 10000.0},
    _K.MUL: {"scale": 1.0},
    _K.SOFTMAX: {"dim": -1},
}
"""Defaults the reference numerics apply when a param is absent (spec §7)."""


def param_default(kind: InstructionKind, key: str) -> float:
    """The default of param ``key`` of opcode ``kind`` (spec §7); :class:`KeyError` when it has none."""
    return PARAM_DEFAULTS[kind][key]


def default_text(kind: InstructionKind, key: str) -> str:
    """``key = value`` as the spec's tables print a default (spec §7): ``eps = 1e-6``, ``dim = −1``."""
    shown = re.sub(r"e([-+])0*(\d)", r"e\1\2", repr(param_default(kind, key))).replace("e+", "e")
    return f"{key} = {_MINUS}{shown[1:]}" if shown.startswith("-") else f"{key} = {shown}"


_MINUS = "\N{MINUS SIGN}"


INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def opcode_of(value: object) -> InstructionKind:
    """The opcode a FUSED recipe step names, by name (``"GEMV_TILE"``) or by code (``5``, ``"5"``)
    (spec §7); :class:`ValueError` when it names none."""
    try:
        if isinstance(value, str) and not value.lstrip("-").isdigit():
            return InstructionKind[value]
        return InstructionKind(int(value))  # type: ignore[call-overload]
    except (KeyError, ValueError, TypeError, OverflowError):
        raise ValueError(f"{value!r} is not an opcode") from None
