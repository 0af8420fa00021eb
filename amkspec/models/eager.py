"""An eager PyTorch forward of the decoder: the whole-model oracle (the lowering guide).

The numerics follow the original toy model: RMSNorm normalises in float32, casts back to the
model dtype and then multiplies by the weight; attention scores, softmax and the weighted sum run
in float32 and are cast back; RoPE is rotate-half with angles computed in float32; GQA maps query
head ``h`` to kv head ``h // (n_heads // n_kv_heads)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from amkspec.ir import DType
from amkspec.models.config import ModelConfig
from amkspec.models.weights import torch_dtype


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """``(x · rsqrt(mean(x²) + eps))`` in float32, cast back to ``x``'s dtype, then ``· w``."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_tables(config: ModelConfig, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin, ``[S, head_dim]`` float32, duplicated across the two halves."""
    half = config.head_dim // 2
    exponent = torch.arange(half, dtype=torch.float32) / half
    inv_freq = 1.0 / (config.rope_theta ** exponent)
    ang = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE of ``x`` ``[S, heads, hd]`` with tables ``[S, hd]``; result in x's dtype."""
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (xf * cos[:, None, :] + rotated * sin[:, None, :]).to(x.dtype)


class EagerDecoder:
    """The decoder evaluated eagerly: :meth:`prefill` over a sequence, or :meth:`step` with a KV cache.

    ``weights`` is a state dict (keys of ``ModelConfig.weight_shapes``), cast to ``dtype``
    (default: the model's).
    The cache holds post-RoPE keys and raw values per layer, ``[B, max_seq, n_kv, hd]``.
    """

    def __init__(self, config: ModelConfig, weights: Mapping[str, torch.Tensor],
                 dtype: DType | None = None) -> None:
        self.config = config
        self.dtype = config.dtype if dtype is None else dtype
        dt = torch_dtype(self.dtype)
        missing = [k for k in config.weight_shapes() if k not in weights]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise KeyError(f"weights lack {missing[0]!r}{more}")
        self.w = {k: torch.as_tensor(weights[k]).to(dt) for k in config.weight_shapes()}
        self.pos = 0
        self.k_cache: list[torch.Tensor] = []
        self.v_cache: list[torch.Tensor] = []

    def _linear(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return x @ self.w[key].T

    def _mlp(self, x: torch.Tensor, p: str) -> torch.Tensor:
        y = rms_norm(x, self.w[f"{p}.post_norm"], self.config.rms_eps)
        gate = self._linear(y, f"{p}.mlp.gate_proj.weight")
        act = F.silu(gate) * self._linear(y, f"{p}.mlp.up_proj.weight")
        return x + self._linear(act, f"{p}.mlp.down_proj.weight")

    def _qkv(self, x: torch.Tensor, p: str, positions: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        c = self.config
        y = rms_norm(x, self.w[f"{p}.input_norm"], c.rms_eps)
        s = x.shape[0]
        q = self._linear(y, f"{p}.attn.q_proj.weight").view(s, c.n_heads, c.head_dim)
        k = self._linear(y, f"{p}.attn.k_proj.weight").view(s, c.n_kv_heads, c.head_dim)
        v = self._linear(y, f"{p}.attn.v_proj.weight").view(s, c.n_kv_heads, c.head_dim)
        cos, sin = rope_tables(c, positions)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
                ) -> torch.Tensor:
        """``q`` ``[S, n_h, hd]``, ``k``/``v`` ``[T, n_kv, hd]`` → ``[S, n_h·hd]`` in q's dtype."""
        c = self.config
        rep = c.n_heads // c.n_kv_heads
        kf = k.float().repeat_interleave(rep, dim=1)
        vf = v.float().repeat_interleave(rep, dim=1)
        scores = torch.einsum("shd,thd->hst", q.float(), kf) * c.scale
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        out = torch.einsum("hst,thd->shd", scores.softmax(dim=-1), vf)
        return out.reshape(q.shape[0], c.q_dim).to(q.dtype)

    def _head(self, x: torch.Tensor) -> torch.Tensor:
        return self._linear(rms_norm(x, self.w["final_norm"], self.config.rms_eps), self.config.lm_head_key)

    def prefill(self, tokens: Sequence[int]) -> torch.Tensor:
        """Logits ``[S, vocab]`` of a causal forward over ``tokens`` at positions ``0..S-1``."""
        s = len(tokens)
        x = self.w["embed.weight"][torch.as_tensor(list(tokens), dtype=torch.long)]
        positions = torch.arange(s)
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        for n in range(self.config.n_layers):
            p = f"layers.{n}"
            q, k, v = self._qkv(x, p, positions)
            x = x + self._linear(self._attend(q, k, v, mask), f"{p}.attn.o_proj.weight")
            x = self._mlp(x, p)
        return self._head(x)

    def reset(self, batch: int = 1) -> None:
        """Empty the KV cache and restart at position 0 for ``batch`` sequences."""
        c = self.config
        shape = (batch, c.max_seq, c.n_kv_heads, c.head_dim)
        dt = torch_dtype(self.dtype)
        self.pos = 0
        self.k_cache = [torch.zeros(shape, dtype=dt) for _ in range(c.n_layers)]
        self.v_cache = [torch.zeros(shape, dtype=dt) for _ in range(c.n_layers)]

    def step(self, tokens: Sequence[int]) -> torch.Tensor:
        """One decode step of ``B = len(tokens)`` sequences at :attr:`pos`; logits ``[B, vocab]``."""
        c = self.config
        b = len(tokens)
        if self.pos >= c.max_seq:
            raise ValueError(f"position {self.pos} is past max_seq {c.max_seq}")
        if not self.k_cache:
            self.reset(b)
        elif self.k_cache[0].shape[0] != b:
            if self.pos:
                raise ValueError(f"batch changed from {self.k_cache[0].shape[0]} to {b} mid-sequence")
            self.reset(b)
        x = self.w["embed.weight"][torch.as_tensor(list(tokens), dtype=torch.long)]
        positions = torch.full((b,), self.pos)
        for n in range(c.n_layers):
            p = f"layers.{n}"
            q, k, v = self._qkv(x, p, positions)
            self.k_cache[n][:, self.pos] = k
            self.v_cache[n][:, self.pos] = v
            kv_len = self.pos + 1
            rows = [self._attend(q[i:i + 1], self.k_cache[n][i, :kv_len], self.v_cache[n][i, :kv_len], None)
                    for i in range(b)]
            x = x + self._linear(torch.cat(rows), f"{p}.attn.o_proj.weight")
            x = self._mlp(x, p)
        self.pos += 1
        return self._head(x)
