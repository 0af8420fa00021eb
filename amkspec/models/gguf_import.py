"""A GGUF file (llama.cpp's format, read with ``gguf``) → a Llama decoder (the lowering guide, "Real
checkpoints").

The metadata gives the :class:`~amkspec.models.ModelConfig`; every tensor is dequantized to float32
with ``gguf.quants.dequantize`` (so each weight is exactly ``gguf``'s value), or, for the native
path, each Q4_1 / Q8_0 tensor kept as it is stored (:mod:`amkspec.models.ggml_blocks`, spec §7.9);
the rows of q and k are un-permuted (llama.cpp's converter interleaves the two halves of each head
for its own RoPE; the template's RoPE is rotate-half); a file without an ``output`` tensor ties the
lm head to the token embedding. Anything the template cannot express is refused
(:data:`~amkspec.models.refusals.REFUSALS`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amkspec.models.config import ModelConfig
from amkspec.models.ggml_blocks import from_reader_tensor
from amkspec.models.quant import NATIVE_FORMATS, QuantTensor
from amkspec.models.refusals import CheckpointRefused

READABLE_FLOATS = ("F32", "F16", "BF16")
"""GGUF float types read as they are (a cast to float32 loses nothing)."""
NOT_WEIGHTS = ("I8", "I16", "I32", "I64", "F64")
"""GGUF types that are no weight format (integers, or doubles a float32 cannot hold exactly)."""

_LAYER = {  # gguf's MODEL_TENSOR name → the template's key under ``layers.{n}``
    "ATTN_NORM": "input_norm", "ATTN_Q": "attn.q_proj.weight", "ATTN_K": "attn.k_proj.weight",
    "ATTN_V": "attn.v_proj.weight", "ATTN_OUT": "attn.o_proj.weight", "FFN_NORM": "post_norm",
    "FFN_GATE": "mlp.gate_proj.weight", "FFN_UP": "mlp.up_proj.weight", "FFN_DOWN": "mlp.down_proj.weight",
}
_GLOBAL = {"TOKEN_EMBD": "embed.weight", "OUTPUT_NORM": "final_norm", "OUTPUT": "lm_head.weight"}


def tensor_keys(n_layers: int) -> dict[str, str]:
    """GGUF tensor name (``blk.3.attn_q.weight``) → state-dict key (``layers.3.attn.q_proj.weight``),
    from ``gguf``'s own name table."""
    import gguf

    names = {t.name: gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSOR}
    out = {f"{names[k]}.weight": v for k, v in _GLOBAL.items()}
    for n in range(n_layers):
        for k, v in _LAYER.items():
            out[f"{names[k].format(bid=n)}.weight"] = f"layers.{n}.{v}"
    return out


def unpermute_rows(w: torch.Tensor, heads: int) -> torch.Tensor:
    """Undo llama.cpp's q/k row permutation: within each head, row ``2i + j`` of the file is row
    ``j·(hd/2) + i`` of the rotate-half layout (``j`` ∈ {0, 1})."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape).contiguous()


class Meta:
    """Typed access to a reader's metadata fields, refusing in one line."""

    def __init__(self, reader: Any, where: str) -> None:
        self.reader, self.where = reader, where

    def get(self, key: str, default: Any = None) -> Any:
        field = self.reader.fields.get(key)
        if field is None:
            return default
        try:
            return field.contents()
        except (UnicodeDecodeError, ValueError, IndexError) as exc:
            raise CheckpointRefused(self.where, "unreadable", f"metadata {key}: {exc}") from None

    def count(self, key: str, default: int | None = None) -> int:
        value = self.get(key, default)
        if type(value) is not int or value < 1:
            shown = "missing" if value is None else f"{value!r}"
            raise CheckpointRefused(self.where, "config", f"{key} must be a positive integer, got {shown}")
        return value

    def number(self, key: str, default: float) -> float:
        value = self.get(key, default)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not np.isfinite(value) or value <= 0:
            raise CheckpointRefused(self.where, "config", f"{key} must be a positive number, got {value!r}")
        return float(value)


def read_config(reader: Any, where: str, name: str, source: str) -> ModelConfig:
    """The model configuration of a GGUF file's metadata (refusing what the template cannot express);
    ``max_seq`` is the context length."""
    import gguf

    meta = Meta(reader, where)
    arch = meta.get(gguf.Keys.General.ARCHITECTURE)
    if arch != "llama":
        raise CheckpointRefused(where, "architecture", f"general.architecture is {arch!r}, not 'llama'")

    def key(k: str) -> str:
        return k.format(arch=arch)

    if meta.get(key(gguf.Keys.LLM.EXPERT_COUNT), 0):
        raise CheckpointRefused(where, "moe", f"{key(gguf.Keys.LLM.EXPERT_COUNT)} is "
                                f"{meta.get(key(gguf.Keys.LLM.EXPERT_COUNT))}")
    scaling = meta.get(key(gguf.Keys.Rope.SCALING_TYPE), "none")
    factor = meta.get(key(gguf.Keys.Rope.SCALING_FACTOR), 1.0)
    if scaling != "none" or factor not in (0.0, 1.0):
        raise CheckpointRefused(where, "rope-scaling", f"rope scaling {scaling!r} with factor {factor}")
    window = meta.get(key(gguf.Keys.Attention.SLIDING_WINDOW))
    if window:
        raise CheckpointRefused(where, "sliding-window",
                                f"{key(gguf.Keys.Attention.SLIDING_WINDOW)} is {window}")
    hidden = meta.count(key(gguf.Keys.LLM.EMBEDDING_LENGTH))
    heads = meta.count(key(gguf.Keys.Attention.HEAD_COUNT))
    kv_heads = meta.count(key(gguf.Keys.Attention.HEAD_COUNT_KV), heads)
    head_dim = meta.count(key(gguf.Keys.Attention.KEY_LENGTH), hidden // heads or None)
    value_dim = meta.count(key(gguf.Keys.Attention.VALUE_LENGTH), head_dim)
    rotary = meta.count(key(gguf.Keys.Rope.DIMENSION_COUNT), head_dim)
    if rotary != head_dim:
        raise CheckpointRefused(where, "partial-rotary", f"RoPE covers {rotary} of {head_dim} dimensions")
    if value_dim != head_dim:
        raise CheckpointRefused(where, "config",
                                f"value length {value_dim} differs from key length {head_dim}")
    tokens = reader.fields.get(gguf.Keys.Tokenizer.LIST)
    vocab = meta.count(key(gguf.Keys.LLM.VOCAB_SIZE), len(tokens.data) if tokens is not None else None)
    context = meta.count(key(gguf.Keys.LLM.CONTEXT_LENGTH))
    dims: dict[str, Any] = {
            "vocab": vocab, "hidden": hidden, "n_layers": meta.count(key(gguf.Keys.LLM.BLOCK_COUNT)),
            "n_heads": heads, "n_kv_heads": kv_heads, "head_dim": head_dim,
            "intermediate": meta.count(key(gguf.Keys.LLM.FEED_FORWARD_LENGTH)),
            "rms_eps": meta.number(key(gguf.Keys.Attention.LAYERNORM_RMS_EPS), 1e-5),
            "rope_theta": meta.number(key(gguf.Keys.Rope.FREQ_BASE), 10000.0), "max_seq": context}
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    native = any(t.tensor_type.name in NATIVE_FORMATS for t in reader.tensors)
    try:
        return ModelConfig(name, **dims, source=source, tied=tied, checkpoint=str(Path(where)),
                           native_quant=native)
    except ValueError as exc:
        raise CheckpointRefused(where, "config", str(exc)) from None


def dequantized(tensor: Any, where: str) -> torch.Tensor:
    """A GGUF tensor as float32, exactly as ``gguf.quants.dequantize`` computes it."""
    from gguf.quants import dequantize

    kind = tensor.tensor_type.name
    if kind in NOT_WEIGHTS:
        raise CheckpointRefused(where, "tensor-type", f"tensor {tensor.name} is {kind}, not a weight type")
    try:
        values = dequantize(tensor.data, tensor.tensor_type)
    except (NotImplementedError, ValueError) as exc:
        raise CheckpointRefused(where, "tensor-type", f"tensor {tensor.name} of type {kind}: {exc}") from None
    values = np.ascontiguousarray(values, dtype=np.float32)
    return torch.from_numpy(values if values.flags.writeable else values.copy())


def native(tensor: Any, where: str) -> QuantTensor:
    """A Q4_1 / Q8_0 GGUF tensor as the native quantized weight (:mod:`amkspec.models.ggml_blocks`)."""
    try:
        return from_reader_tensor(tensor)
    except ValueError as exc:
        raise CheckpointRefused(where, "tensor-type", f"tensor {tensor.name}: {exc}") from None


def read_weights(reader: Any, config: ModelConfig, where: str, on_tensor: Callable[[str], None] | None = None,
                 *, keep_native: bool = False) -> dict[str, Any]:
    """The state dict of a GGUF file, in :meth:`ModelConfig.weight_shapes` order: float32 tensors,
    or with ``keep_native`` each Q4_1 / Q8_0 tensor as its :class:`~amkspec.models.quant.QuantTensor`."""
    names = tensor_keys(config.n_layers)
    shapes = config.weight_shapes()
    weights: dict[str, torch.Tensor] = {}
    for tensor in reader.tensors:
        name = tensor.name
        if name.endswith(".bias"):
            raise CheckpointRefused(where, "bias", f"tensor {name}")
        if name.startswith("rope_freqs"):
            raise CheckpointRefused(where, "rope-scaling", f"tensor {name} rescales the RoPE frequencies")
        if name not in names:
            raise CheckpointRefused(where, "unexpected-tensor", f"tensor {name}")
        key = names[name]
        kept = keep_native and tensor.tensor_type.name in NATIVE_FORMATS
        value: Any = native(tensor, where) if kept else dequantized(tensor, where)
        if tuple(value.shape) != shapes[key]:
            raise CheckpointRefused(where, "shape", f"tensor {name} is {tuple(value.shape)}, expected "
                                    f"{shapes[key]}")
        if key.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config.n_heads if key.endswith("q_proj.weight") else config.n_kv_heads
            rows = unpermute_rows(torch.arange(value.shape[0])[:, None], heads)[:, 0].numpy()
            value = value.take_rows(rows) if kept else value[torch.from_numpy(rows)]
        weights[key] = value
        if on_tensor is not None:
            on_tensor(name)
    missing = [k for k in shapes if k not in weights]
    if missing:
        gguf_name = {v: k for k, v in names.items()}
        raise CheckpointRefused(where, "missing-tensor", f"tensor {gguf_name[missing[0]]}"
                                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return {k: weights[k] for k in shapes}


def open_reader(path: Path) -> Any:
    """``gguf.GGUFReader`` of ``path``; an unreadable file is refused in one line."""
    import gguf

    try:
        return gguf.GGUFReader(path)
    except (ValueError, OSError, IndexError, KeyError, TypeError) as exc:
        reason = getattr(exc, "strerror", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CheckpointRefused(str(path), "unreadable", f"not a readable GGUF file ({reason})") from None
