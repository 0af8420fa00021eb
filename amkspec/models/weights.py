"""Deterministic weights, generated exactly as the original toy model creates them (lowering guide).

Under ``torch.manual_seed(seed)`` the parameters are created (and the RNG consumed) in this order:
the embedding (``nn.Embedding``, normal N(0, 1)); per layer the two norm vectors (ones, no RNG)
then q, k, v, o, gate, up, down (``nn.Linear`` default init, bias-free); the final norm (ones);
the lm head. Everything is created in float32 and then converted to the model dtype. The norms
consume no randomness, so the dict lists keys in state-dict order (input norm, attention, post
norm, MLP).
"""

from __future__ import annotations

import torch
from torch import nn

from amkspec.ir import DType
from amkspec.models.config import ModelConfig

TORCH_DTYPES: dict[DType, torch.dtype] = {
    DType.F32: torch.float32,
    DType.F16: torch.float16,
    DType.BF16: torch.bfloat16,
}
"""The floating dtypes a model can be evaluated in."""


def torch_dtype(dtype: DType) -> torch.dtype:
    """The torch dtype of a model/lowering dtype (F32, F16 or BF16)."""
    try:
        return TORCH_DTYPES[dtype]
    except KeyError:
        raise ValueError(f"unsupported model dtype {dtype.name} (use F32, F16 or BF16)") from None


def _linear(n_out: int, n_in: int) -> torch.Tensor:
    return nn.Linear(n_in, n_out, bias=False).weight.detach()


def make_weights(config: ModelConfig, dtype: DType | None = None, seed: int | None = None
                 ) -> dict[str, torch.Tensor]:
    """The state dict (keys: :meth:`ModelConfig.weight_shapes`), the original's per seed (to the last
    few bits, which torch's random kernels round differently on each SIMD path)."""
    target = torch_dtype(config.dtype if dtype is None else dtype)
    h, i = config.hidden, config.intermediate
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed if seed is None else seed)
        out: dict[str, torch.Tensor] = {"embed.weight": nn.Embedding(config.vocab, h).weight.detach()}
        for n in range(config.n_layers):
            p = f"layers.{n}"
            out[f"{p}.input_norm"] = torch.ones(h)
            out[f"{p}.attn.q_proj.weight"] = _linear(config.q_dim, h)
            out[f"{p}.attn.k_proj.weight"] = _linear(config.kv_dim, h)
            out[f"{p}.attn.v_proj.weight"] = _linear(config.kv_dim, h)
            out[f"{p}.attn.o_proj.weight"] = _linear(h, config.q_dim)
            out[f"{p}.post_norm"] = torch.ones(h)
            out[f"{p}.mlp.gate_proj.weight"] = _linear(i, h)
            out[f"{p}.mlp.up_proj.weight"] = _linear(i, h)
            out[f"{p}.mlp.down_proj.weight"] = _linear(h, i)
        out["final_norm"] = torch.ones(h)
        out["lm_head.weight"] = _linear(config.vocab, h)
    return {k: v.to(target).contiguous() for k, v in out.items()}
