"""Attention: ATTENTION_TILE (normal, PARTIAL_WRITE, batched), ATTENTION_COMBINE, ROPE (spec §7).

Caches are position-major ``[max_seq, n_kv, hd]`` (batched: ``[B, max_seq, n_kv, hd]``);
the K cache holds post-RoPE keys. GQA repeats kv heads by interleaving, so query
head ``h`` reads kv head ``h // (n_heads // n_kv_heads)``.
"""

from __future__ import annotations

import functools
import math

import torch

from amkspec.ir import OP_REGISTRY, AttentionFlags, InstructionKind, default_text, param_default
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


def _window(cache: Tensor, start: int, length: int) -> Tensor:
    """Cache rows ``[start, start+length)`` (position axis −3) as float32, kv heads moved before
    positions: ``[..., n_kv, hd, length]`` for K (transposed for the product)."""
    if start < 0 or start + max(length, 0) > cache.shape[-3]:
        raise OpError(f"attention window {start}+{length} outside a cache of {cache.shape[-3]} positions")
    return f32(cache[..., start : start + max(length, 0), :, :])


@semantics(
    _K.ATTENTION_TILE, family="Attention",
    inputs="q [n_heads, hd], k_cache, v_cache [max_seq, n_kv, hd] (a 4th input is ignored); "
    "batched: q [B, n_heads, hd], caches [B, max_seq, n_kv, hd]",
    outputs="out [1, n_heads·hd] (head-major); PARTIAL_WRITE: [n_heads, hd+2]",
    params="head_dim (required); kv_start = 0; kv_len = max_seq; n_heads = q.shape[−2]; "
    "n_kv_heads = n_heads; scale = 1/sqrt(head_dim); flags = 0 (bit0 causal: no effect, "
    "bit1 PARTIAL_WRITE; ignored when batched)",
    shapes="n_heads divisible by n_kv_heads; window inside the cache",
    formula="s[h,j] = scale · q[h]·K[j, h//rep]; out[h] = Σ_j softmax_j(s[h]) · V[j, h//rep]; "
    "PARTIAL_WRITE rows [Σ_j e^(s−m) V | m = max_j s | l = Σ_j e^(s−m)] (empty window: 0, −inf, 0)",
)
def attention_tile(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 ATTENTION_TILE: GQA attention of one decode query over a KV window."""
    arity(inputs, outputs, _K.ATTENTION_TILE, 3, 1)
    q, k_cache, v_cache = inputs[0], inputs[1], inputs[2]
    hd = int_param(params, "head_dim", _K.ATTENTION_TILE)
    if hd <= 0:
        raise OpError(f"ATTENTION_TILE: head_dim must be positive, got {hd}")
    batched = k_cache.dim() == 4
    n_heads = int_param(params, "n_heads", _K.ATTENTION_TILE, q.shape[-2] if q.dim() >= 2 else 1)
    n_kv = int_param(params, "n_kv_heads", _K.ATTENTION_TILE, n_heads)
    if n_kv <= 0 or n_heads % n_kv or k_cache.dim() not in (3, 4) or k_cache.shape[-2] * n_kv == 0:
        raise OpError(
            f"ATTENTION_TILE: {n_heads} heads cannot share {n_kv} kv heads of a {tuple(k_cache.shape)} cache"
        )
    if k_cache.shape[-1] != hd:
        raise OpError(f"ATTENTION_TILE: K cache {tuple(k_cache.shape)} rows are not head_dim {hd} wide")
    if v_cache.shape != k_cache.shape:
        shapes = f"V cache {tuple(v_cache.shape)} differs from K cache {tuple(k_cache.shape)}"
        raise OpError(f"ATTENTION_TILE: {shapes}")
    start = int_param(params, "kv_start", _K.ATTENTION_TILE, 0)
    length = int_param(params, "kv_len", _K.ATTENTION_TILE, k_cache.shape[-3])
    scale = float_param(params, "scale", _K.ATTENTION_TILE, 1.0 / math.sqrt(hd))
    rep = n_heads // n_kv
    # Query head h = g·rep + r reads kv head g: group the query heads by kv head instead of
    # repeat-interleaving the cache (the same products, without copying the window rep times).
    keys = _window(k_cache, start, length).movedim(-3, -1)
    values = _window(v_cache, start, length).movedim(-3, -2)
    lead = (k_cache.shape[0],) if batched else ()
    try:
        qf = f32(q).reshape(*lead, n_kv, rep, hd)
        scores = torch.matmul(qf, keys) * scale
    except RuntimeError as exc:
        raise OpError(f"ATTENTION_TILE: q {tuple(q.shape)} does not match {n_heads} heads of {hd}") from exc
    if not batched and int_param(params, "flags", _K.ATTENTION_TILE, 0) & AttentionFlags.PARTIAL_WRITE:
        store(outputs[0], _partial(scores, values).reshape(n_heads, hd + 2))
        return
    probs = torch.softmax(scores, dim=-1)
    store(outputs[0], torch.matmul(probs, values).reshape(*lead, n_heads, hd))


def _partial(scores: Tensor, values: Tensor) -> Tensor:
    """Un-normalised flash-decoding partial rows ``[acc | m | l]`` per (kv head, query head)."""
    if scores.shape[-1] == 0:
        shape = scores.shape[:-1]
        acc = torch.zeros(*shape, values.shape[-1])
        return torch.cat([acc, torch.full((*shape, 1), -math.inf), torch.zeros(*shape, 1)], dim=-1)
    m = scores.amax(-1, keepdim=True)
    e = torch.exp(scores - m)
    return torch.cat([torch.matmul(e, values), m, e.sum(-1, keepdim=True)], dim=-1)


@semantics(
    _K.ATTENTION_COMBINE, family="Attention",
    inputs=f"P partials ({OP_REGISTRY[_K.ATTENTION_COMBINE].input_range}), each [n_heads, hd+2] rows "
    "[acc | m | l]",
    outputs="out [1, n_heads·hd]",
    params="head_dim = partial row length − 2; n_heads = numel(part0) / (hd+2)",
    shapes="all partials the same shape",
    formula="M = max_p m_p; w_p = e^(m_p − M) if l_p > 0 else 0; "
    "out = Σ_p w_p·acc_p / max(Σ_p w_p·l_p, 1e-20)",
)
def attention_combine(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 ATTENTION_COMBINE: merge PARTIAL_WRITE shards (``head_dim`` may be omitted)."""
    arity(inputs, outputs, _K.ATTENTION_COMBINE, 1, 1)
    row = inputs[0].shape[-1] if inputs[0].dim() else 2
    hd = int_param(params, "head_dim", _K.ATTENTION_COMBINE, row - 2)
    if hd <= 0 or inputs[0].numel() % (hd + 2):
        raise OpError(f"ATTENTION_COMBINE: partial {tuple(inputs[0].shape)} is not rows of head_dim+2")
    n_heads = int_param(params, "n_heads", _K.ATTENTION_COMBINE, inputs[0].numel() // (hd + 2))
    try:
        parts = [f32(p).reshape(n_heads, hd + 2) for p in inputs]
    except RuntimeError as exc:
        raise OpError(f"ATTENTION_COMBINE: partials are not [{n_heads}, {hd + 2}]") from exc
    big_m = torch.stack([p[:, hd] for p in parts]).amax(0)
    acc = torch.zeros(n_heads, hd)
    total = torch.zeros(n_heads)
    for p in parts:
        m, mass = p[:, hd], p[:, hd + 1]
        w = torch.where(mass > 0, torch.exp(torch.where(mass > 0, m - big_m, 0.0)), 0.0)
        total = total + mass * w
        acc = acc + p[:, :hd] * w[:, None]
    store(outputs[0], acc / total.clamp_min(1e-20)[:, None])


@functools.lru_cache(maxsize=64)
def inv_freq(half: int, theta: float) -> Tensor:
    """``1 / theta^(i/half)`` for ``i < half``, float32 (``i/half`` in float32, then the power)."""
    return 1.0 / (theta ** (torch.arange(half, dtype=torch.float32) / half))


@semantics(
    _K.ROPE, family="Attention", inputs="x [n_heads, hd] or [S, n_heads, hd], positions (int)",
    outputs="out (x's shape)", params=f"head_dim (required, even); {default_text(_K.ROPE, 'theta')}",
    shapes="rank 2 uses positions[0]; rank 3 needs len(positions) = S",
    formula="inv_freq[i] = 1/theta^(i/half); a = pos·inv_freq; "
    "out[i] = x[i]·cos a − x[i+half]·sin a; out[i+half] = x[i+half]·cos a + x[i]·sin a (rotate-half)",
)
def rope(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 ROPE: rotate-half rotary embedding, angles from the ``positions`` input buffer."""
    arity(inputs, outputs, _K.ROPE, 2, 1)
    x, pos = f32(inputs[0]), inputs[1].flatten()
    hd = int_param(params, "head_dim", _K.ROPE)
    half = hd // 2
    if hd <= 0 or hd % 2 or x.dim() not in (2, 3) or x.shape[-1] != hd:
        raise OpError(f"ROPE: x {tuple(x.shape)} is not [.., heads, {hd}] with an even head_dim")
    slabs = 1 if x.dim() == 2 else x.shape[0]
    if pos.numel() < 1 or (x.dim() == 3 and pos.numel() != slabs):
        raise OpError(f"ROPE: {pos.numel()} positions for {slabs} slab(s)")
    theta = float_param(params, "theta", _K.ROPE, param_default(_K.ROPE, "theta"))
    ang = pos[:slabs].float()[:, None] * inv_freq(half, theta)
    c, s = torch.cos(ang), torch.sin(ang)
    if x.dim() == 3:
        c, s = c[:, None, :], s[:, None, :]
    else:
        c, s = c[0], s[0]
    x1, x2 = x[..., :half], x[..., half:]
    store(outputs[0], torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1))
