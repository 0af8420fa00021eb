"""RMSNORM, LAYERNORM and the elementwise ops against float64 formulas (spec §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from amkspec.ir import InstructionKind as K
from amkspec.semantics import OpError
from tests.semantics.helpers import DTYPES, close, rand, run

pytestmark = pytest.mark.numerics


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm(dtype: torch.dtype) -> None:
    x, w = rand(3, 16, seed=1, dtype=dtype), rand(16, seed=2, dtype=dtype)
    out = run(K.RMSNORM, [x, w], torch.zeros(3, 16, dtype=dtype), eps=1e-5, hidden=16)
    xd, wd = x.double().numpy(), w.double().numpy()
    expected = xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-5) * wd
    close(out, expected, dtype, scale=4)


def test_norm_eps_defaults_differ() -> None:
    x = torch.tensor([[1e-3, -1e-3, 1e-3, -1e-3]])
    ones = torch.ones(4)
    rms = run(K.RMSNORM, [x, ones], torch.zeros(1, 4))
    assert rms[0, 0].item() == pytest.approx(1e-3 / math.sqrt(1e-6 + 1e-6), rel=1e-5)
    ln = run(K.LAYERNORM, [x, ones], torch.zeros(1, 4))
    assert ln[0, 0].item() == pytest.approx(1e-3 / math.sqrt(1e-6 + 1e-5), rel=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_layernorm(dtype: torch.dtype, with_bias: bool) -> None:
    x, w, b = rand(2, 8, seed=3, dtype=dtype), rand(8, seed=4, dtype=dtype), rand(8, seed=5, dtype=dtype)
    inputs = [x, w, b] if with_bias else [x, w]
    out = run(K.LAYERNORM, inputs, torch.zeros(2, 8, dtype=dtype), eps=1e-5, hidden=8)
    xd = x.double().numpy()
    mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    shift = b.double().numpy() if with_bias else 0
    expected = (xd - mean) / np.sqrt(var + 1e-5) * w.double().numpy() + shift
    close(out, expected, dtype, scale=4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul(dtype: torch.dtype) -> None:
    g, u = rand(1, 32, seed=6, dtype=dtype), rand(1, 32, seed=7, dtype=dtype)
    out = run(K.SILU_MUL, [g, u], torch.zeros(1, 32, dtype=dtype))
    gd = g.double().numpy()
    close(out, gd / (1 + np.exp(-gd)) * u.double().numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_is_the_exact_erf_form(dtype: torch.dtype) -> None:
    x = rand(40, seed=8, dtype=dtype)
    out = run(K.GELU, [x], torch.zeros(40, dtype=dtype))
    expected = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.double().tolist()])
    close(out, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_and_mul_broadcast(dtype: torch.dtype) -> None:
    a, b = rand(3, 4, seed=9, dtype=dtype), rand(4, seed=10, dtype=dtype)
    ad, bd = a.double().numpy(), b.double().numpy()
    close(run(K.ADD, [a, b], torch.zeros(3, 4, dtype=dtype)), ad + bd, dtype)
    close(run(K.MUL, [a, b], torch.zeros(3, 4, dtype=dtype)), ad * bd, dtype)


def test_mul_with_one_input_scales() -> None:
    x = torch.tensor([1.0, -2.0])
    assert run(K.MUL, [x], torch.zeros(2), scale=2.5).tolist() == [2.5, -5.0]
    assert run(K.MUL, [x], torch.zeros(2)).tolist() == [1.0, -2.0]


def test_add_rejects_shapes_that_do_not_broadcast() -> None:
    with pytest.raises(OpError, match="broadcast"):
        run(K.ADD, [torch.zeros(3), torch.zeros(4)], torch.zeros(3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax(dtype: torch.dtype, dim: int) -> None:
    x = rand(3, 5, seed=11, dtype=dtype)
    out = run(K.SOFTMAX, [x], torch.zeros(3, 5, dtype=dtype), dim=dim)
    e = np.exp(x.double().numpy())
    close(out, e / e.sum(axis=dim, keepdims=True), dtype)


def test_softmax_rejects_a_dim_out_of_range() -> None:
    with pytest.raises(OpError, match="dim"):
        run(K.SOFTMAX, [torch.zeros(2, 2)], torch.zeros(2, 2), dim=2)


def test_allreduce_sums_in_input_order() -> None:
    shards = [torch.tensor([1e8]), torch.tensor([1.0]), torch.tensor([-1e8])]
    out = run(K.ALLREDUCE_SHARD, shards, torch.zeros(1))
    assert out.item() == ((np.float32(1e8) + np.float32(1.0)) + np.float32(-1e8))


def test_sample_argmax_takes_the_first_maximum() -> None:
    logits = torch.tensor([[0.0, 3.0, 1.0, 3.0], [5.0, 5.0, 5.0, 5.0]])
    out = run(K.SAMPLE_ARGMAX, [logits], torch.zeros(2, dtype=torch.int32))
    expected = [min(i for i, v in enumerate(row) if v == max(row)) for row in logits.tolist()]
    assert out.tolist() == expected and out.dtype == torch.int32
