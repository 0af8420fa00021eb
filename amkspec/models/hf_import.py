"""An HF checkpoint directory (``config.json``, ``*.safetensors``, ``tokenizer.json``) → a Llama decoder
(the lowering guide, "Real checkpoints").

``config.json`` gives the :class:`~amkspec.models.ModelConfig` (transformers' ``LlamaConfig`` keys and
defaults); every tensor of the safetensors files is read with ``safetensors`` and widened to float32
(F32, F16 and BF16 widen exactly). HF's q/k rows are already in rotate-half order. Anything the
template cannot express is refused (:data:`~amkspec.models.refusals.REFUSALS`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from amkspec.models.config import ModelConfig
from amkspec.models.refusals import CheckpointRefused

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
IGNORED = re.compile(r"model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")
"""Buffers older checkpoints store that the config already determines (RoPE's inverse frequencies)."""

_LAYER = {
    "input_layernorm.weight": "input_norm", "self_attn.q_proj.weight": "attn.q_proj.weight",
    "self_attn.k_proj.weight": "attn.k_proj.weight", "self_attn.v_proj.weight": "attn.v_proj.weight",
    "self_attn.o_proj.weight": "attn.o_proj.weight", "post_attention_layernorm.weight": "post_norm",
    "mlp.gate_proj.weight": "mlp.gate_proj.weight", "mlp.up_proj.weight": "mlp.up_proj.weight",
    "mlp.down_proj.weight": "mlp.down_proj.weight",
}
_GLOBAL = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "final_norm",
           "lm_head.weight": "lm_head.weight"}


def tensor_keys(n_layers: int) -> dict[str, str]:
    """HF tensor name → state-dict key."""
    out = dict(_GLOBAL)
    for n in range(n_layers):
        out.update({f"model.layers.{n}.{k}": f"layers.{n}.{v}" for k, v in _LAYER.items()})
    return out


def read_json(path: Path, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise CheckpointRefused(where, "unreadable", f"{path.name}: {reason}") from None
    if not isinstance(doc, dict):
        raise CheckpointRefused(where, "unreadable", f"{path.name} is not a JSON object")
    return doc


def _count(cfg: Mapping[str, Any], key: str, where: str, default: Any = None) -> int:
    value = cfg.get(key, default)
    if value is None:
        value = default
    if type(value) is not int or value < 1:
        shown = "missing" if value is None else repr(value)
        raise CheckpointRefused(where, "config", f"config.json {key} must be a positive integer, got {shown}")
    return value


def _number(cfg: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = cfg.get(key, default)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise CheckpointRefused(where, "config",
                                f"config.json {key} must be a positive number, got {value!r}")
    return float(value)


def _rope(cfg: Mapping[str, Any], where: str) -> float:
    """RoPE's base; scaled RoPE (``rope_scaling``, or transformers 5's ``rope_parameters``) is refused."""
    params = cfg.get("rope_parameters")
    scaling = cfg.get("rope_scaling")
    for what in (params, scaling):
        if what is None:
            continue
        if not isinstance(what, dict):
            raise CheckpointRefused(where, "config", f"config.json rope settings {what!r} are not an object")
        kind = what.get("rope_type", what.get("type", "default"))
        if kind != "default":
            raise CheckpointRefused(where, "rope-scaling", f"RoPE type {kind!r}")
    theta = (params or {}).get("rope_theta", cfg.get("rope_theta", 10000.0))
    return _number({"rope_theta": theta}, "rope_theta", where, 10000.0)


def _refuse_features(cfg: Mapping[str, Any], where: str) -> None:
    """The config keys of features the template cannot express."""
    archs = cfg.get("architectures") or ["LlamaForCausalLM"]
    if cfg.get("model_type") != "llama" or archs != ["LlamaForCausalLM"]:
        raise CheckpointRefused(where, "architecture", f"model_type {cfg.get('model_type')!r}, architectures "
                                f"{archs!r} (only 'llama' / LlamaForCausalLM)")
    for key in ("attention_bias", "mlp_bias"):
        if cfg.get(key):
            raise CheckpointRefused(where, "bias", f"config.json {key} is true")
    if cfg.get("partial_rotary_factor", 1.0) != 1.0:
        raise CheckpointRefused(where, "partial-rotary",
                                f"partial_rotary_factor {cfg['partial_rotary_factor']}")
    for key in ("num_local_experts", "num_experts"):
        if cfg.get(key):
            raise CheckpointRefused(where, "moe", f"config.json {key} is {cfg[key]}")
    act = cfg.get("hidden_act", "silu")
    if act != "silu":
        raise CheckpointRefused(where, "activation", f"hidden_act {act!r} (the template's MLP is SiLU)")
    if cfg.get("sliding_window"):
        raise CheckpointRefused(where, "sliding-window", f"sliding_window {cfg['sliding_window']}")


def read_config(cfg: Mapping[str, Any], where: str, name: str, source: str) -> ModelConfig:
    """The model configuration of a ``config.json`` (transformers' LlamaConfig defaults); ``max_seq``
    is ``max_position_embeddings``."""
    _refuse_features(cfg, where)
    hidden = _count(cfg, "hidden_size", where)
    heads = _count(cfg, "num_attention_heads", where)
    tied = cfg.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise CheckpointRefused(where, "config", f"config.json tie_word_embeddings {tied!r} is not a boolean")
    dims: dict[str, Any] = {"vocab": _count(cfg, "vocab_size", where), "hidden": hidden,
            "n_layers": _count(cfg, "num_hidden_layers", where), "n_heads": heads,
            "n_kv_heads": _count(cfg, "num_key_value_heads", where, heads),
            "head_dim": _count(cfg, "head_dim", where, hidden // heads or None),
            "intermediate": _count(cfg, "intermediate_size", where),
            "rms_eps": _number(cfg, "rms_norm_eps", where, 1e-6), "rope_theta": _rope(cfg, where),
            "max_seq": _count(cfg, "max_position_embeddings", where, 2048)}
    try:
        return ModelConfig(name, **dims, source=source, tied=tied, checkpoint=where)
    except ValueError as exc:
        raise CheckpointRefused(where, "config", str(exc)) from None


def stored_types(directory: Path, config: ModelConfig, where: str) -> dict[str, str]:
    """State-dict key → the dtype a tensor is stored in (``F32``, ``BF16``, ...), from the files' headers."""
    from safetensors import SafetensorError, safe_open

    names = tensor_keys(config.n_layers)
    types: dict[str, str] = {}
    for file in sorted(directory.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt") as f:
                types.update({names[n]: f.get_slice(n).get_dtype() for n in f.keys() if n in names})  # noqa: SIM118
        except (SafetensorError, OSError) as exc:
            raise CheckpointRefused(where, "unreadable", f"{file.name}: {exc}") from None
    if config.tied:
        types.pop("lm_head.weight", None)
    return types


def read_weights(directory: Path, config: ModelConfig, where: str,
                 on_tensor: Callable[[str], None] | None = None) -> dict[str, torch.Tensor]:
    """The float32 state dict of every ``*.safetensors`` file in ``directory``, in state-dict order."""
    from safetensors import SafetensorError, safe_open

    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise CheckpointRefused(where, "missing-tensor", "no *.safetensors file in the directory")
    names = tensor_keys(config.n_layers)
    shapes = {**config.weight_shapes(), "lm_head.weight": (config.vocab, config.hidden)}
    weights: dict[str, torch.Tensor] = {}
    for file in files:
        try:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                    _check_name(name, names, where)
                    if IGNORED.fullmatch(name):
                        continue
                    weights[names[name]] = _tensor(f.get_tensor(name), name, shapes[names[name]], where)
                    if on_tensor is not None:
                        on_tensor(name)
        except (SafetensorError, OSError) as exc:
            raise CheckpointRefused(where, "unreadable", f"{file.name}: {exc}") from None
    _tie(weights, config, where)
    missing = [k for k in config.weight_shapes() if k not in weights]
    if missing:
        hf_name = {v: k for k, v in names.items()}
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointRefused(where, "missing-tensor", f"tensor {hf_name[missing[0]]}{more}")
    return {k: weights[k] for k in config.weight_shapes()}


def _check_name(name: str, names: Mapping[str, str], where: str) -> None:
    if name.endswith(".bias"):
        raise CheckpointRefused(where, "bias", f"tensor {name}")
    if name not in names and not IGNORED.fullmatch(name):
        raise CheckpointRefused(where, "unexpected-tensor", f"tensor {name}")


def _tensor(value: torch.Tensor, name: str, shape: tuple[int, ...], where: str) -> torch.Tensor:
    if value.dtype not in FLOAT_DTYPES:
        stored = str(value.dtype).removeprefix("torch.")
        raise CheckpointRefused(where, "tensor-type", f"tensor {name} is {stored}"
                                ", not F32, F16 or BF16")
    if tuple(value.shape) != shape:
        raise CheckpointRefused(where, "shape", f"tensor {name} is {tuple(value.shape)}, expected {shape}")
    return value.to(torch.float32).contiguous()


def _tie(weights: dict[str, torch.Tensor], config: ModelConfig, where: str) -> None:
    """A tied model keeps one table: an ``lm_head.weight`` must equal the embedding, and is dropped."""
    head = weights.pop("lm_head.weight", None) if config.tied else weights.get("lm_head.weight")
    if config.tied and head is not None and not torch.equal(head, weights.get("embed.weight", head)):
        raise CheckpointRefused(where, "tie-mismatch", "tie_word_embeddings is true but lm_head.weight "
                                "differs from model.embed_tokens.weight")
    if not config.tied and head is None:
        raise CheckpointRefused(where, "tie-mismatch", "tie_word_embeddings is false but there is no "
                                "lm_head.weight")
