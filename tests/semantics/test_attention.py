"""ATTENTION_TILE (normal, partial, batched), ATTENTION_COMBINE and ROPE against float64 loops (spec §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from amkspec.ir import InstructionKind as K
from amkspec.semantics import OpError
from tests.semantics.helpers import DTYPES, close, rand, run

pytestmark = pytest.mark.numerics

NH, NKV, HD, SEQ = 4, 2, 8, 12


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, start: int, length: int, scale: float) -> np.ndarray:
    """Per query head h, softmax attention over cache rows [start, start+length) of kv head h // rep."""
    rep = q.shape[0] // k.shape[1]
    out = np.zeros_like(q)
    for h in range(q.shape[0]):
        g = h // rep
        s = np.array([scale * float(q[h] @ k[j, g]) for j in range(start, start + length)])
        p = np.exp(s - s.max())
        p /= p.sum()
        out[h] = sum(p[i] * v[start + i, g] for i in range(length))
    return out


def _operands(dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (rand(NH, HD, seed=seed, dtype=dtype), rand(SEQ, NKV, HD, seed=seed + 1, dtype=dtype),
            rand(SEQ, NKV, HD, seed=seed + 2, dtype=dtype))


def _params(start: int = 0, length: int = SEQ, **extra: int) -> dict[str, float]:
    return dict(head_dim=HD, kv_start=start, kv_len=length, scale=1 / math.sqrt(HD), n_heads=NH,
                n_kv_heads=NKV, **extra)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("start", "length"), [(0, 1), (0, SEQ), (3, 5)])
def test_gqa_attention_over_a_window(dtype: torch.dtype, start: int, length: int) -> None:
    q, k, v = _operands(dtype)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.zeros(1, NH * HD, dtype=dtype), **_params(start, length))
    expected = _attend(q.double().numpy(), k.double().numpy(), v.double().numpy(), start, length,
                       1 / math.sqrt(HD))
    close(out, expected.reshape(1, -1), dtype, scale=4)


def test_attention_at_one_key_returns_the_value_rows() -> None:
    q, k, v = _operands(torch.float32, seed=3)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.zeros(NH, HD), **_params(0, 1))
    for h in range(NH):
        assert torch.allclose(out[h], v[0, h // (NH // NKV)])


def test_attention_defaults_scale_and_window() -> None:
    q, k, v = _operands(torch.float32, seed=4)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.zeros(NH, HD), head_dim=HD, n_heads=NH, n_kv_heads=NKV)
    expected = _attend(q.double().numpy(), k.double().numpy(), v.double().numpy(), 0, SEQ, HD**-0.5)
    close(out, expected, torch.float32, scale=4)


def test_attention_needs_head_dim() -> None:
    q, k, v = _operands(torch.float32)
    with pytest.raises(OpError, match="head_dim"):
        run(K.ATTENTION_TILE, [q, k, v], torch.zeros(NH, HD))


def test_partial_rows_hold_unnormalised_sums_max_and_mass() -> None:
    q, k, v = _operands(torch.float32, seed=5)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.zeros(NH, HD + 2), **_params(2, 6, flags=2))
    qd, kd, vd = q.double().numpy(), k.double().numpy(), v.double().numpy()
    for h in range(NH):
        s = np.array([float(qd[h] @ kd[j, h // 2]) / math.sqrt(HD) for j in range(2, 8)])
        e = np.exp(s - s.max())
        np.testing.assert_allclose(out[h, HD].item(), s.max(), rtol=1e-5)
        np.testing.assert_allclose(out[h, HD + 1].item(), e.sum(), rtol=1e-5)
        np.testing.assert_allclose(out[h, :HD].numpy(), sum(e[i] * vd[2 + i, h // 2] for i in range(6)),
                                   rtol=1e-5, atol=1e-5)


def test_empty_partial_is_zero_minus_infinity_zero() -> None:
    q, k, v = _operands(torch.float32)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.ones(NH, HD + 2), **_params(4, 0, flags=2))
    assert bool((out[:, :HD] == 0).all()) and bool((out[:, HD] == -math.inf).all())
    assert bool((out[:, HD + 1] == 0).all())


@pytest.mark.parametrize("with_head_dim", [True, False])
def test_combining_shards_equals_whole_window_attention(with_head_dim: bool) -> None:
    q, k, v = _operands(torch.float32, seed=6)
    shards = [(0, 5), (5, 5), (10, 2), (12, 0)]
    parts = [run(K.ATTENTION_TILE, [q, k, v], torch.zeros(NH, HD + 2), **_params(s, n, flags=2))
             for s, n in shards]
    params = {"head_dim": HD, "n_heads": NH} if with_head_dim else {}
    out = run(K.ATTENTION_COMBINE, parts, torch.zeros(1, NH * HD), **params)
    expected = _attend(q.double().numpy(), k.double().numpy(), v.double().numpy(), 0, SEQ, HD**-0.5)
    close(out, expected.reshape(1, -1), torch.float32, scale=4)


def test_combine_of_only_empty_shards_is_zero() -> None:
    empty = torch.cat([torch.zeros(NH, HD), torch.full((NH, 1), -math.inf), torch.zeros(NH, 1)], dim=1)
    out = run(K.ATTENTION_COMBINE, [empty, empty.clone()], torch.ones(1, NH * HD), head_dim=HD)
    assert bool((out == 0).all())


def test_batched_attention_attends_each_sequence_to_its_own_cache() -> None:
    q = rand(2, NH, HD, seed=7)
    k, v = rand(2, SEQ, NKV, HD, seed=8), rand(2, SEQ, NKV, HD, seed=9)
    out = run(K.ATTENTION_TILE, [q, k, v], torch.zeros(2, NH * HD), **_params(1, 7, flags=2))
    for b in range(2):
        expected = _attend(q[b].double().numpy(), k[b].double().numpy(), v[b].double().numpy(), 1, 7,
                           HD**-0.5)
        close(out[b], expected.reshape(-1), torch.float32, scale=4)


def _rope_complex(x: np.ndarray, pos: float, theta: float) -> np.ndarray:
    """Rotate-half RoPE as a complex rotation of the pairs (i, i + half)."""
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]
    z = z * np.exp(1j * pos * theta ** (-np.arange(half) / half))
    return np.concatenate([z.real, z.imag], axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_rank2_uses_the_first_position(dtype: torch.dtype) -> None:
    x = rand(NH, HD, seed=10, dtype=dtype)
    out = run(K.ROPE, [x, torch.tensor([5, 99], dtype=torch.int32)], torch.zeros(NH, HD, dtype=dtype),
              head_dim=HD, theta=500.0)
    close(out, _rope_complex(x.double().numpy(), 5.0, 500.0), dtype, scale=2)


def test_rope_rank3_rotates_each_slab_by_its_position() -> None:
    x = rand(3, NKV, HD, seed=11)
    pos = torch.tensor([0, 7, 200], dtype=torch.int32)
    out = run(K.ROPE, [x, pos], torch.zeros(3, NKV, HD), head_dim=HD)
    for s, p in enumerate(pos.tolist()):
        close(out[s], _rope_complex(x[s].double().numpy(), float(p), 10000.0), torch.float32, scale=8)
    assert torch.equal(out[0], x[0])


def test_rope_needs_one_position_per_slab() -> None:
    with pytest.raises(OpError, match="positions"):
        run(K.ROPE, [torch.zeros(2, 1, 4), torch.tensor([1])], torch.zeros(2, 1, 4), head_dim=4)
