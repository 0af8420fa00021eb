"""Deterministic weights: the original's for the toy (OPS_FACTS §8.2, §8.3), to within rounding.

torch's normal and uniform kernels round differently on each SIMD path (``ATEN_CPU_CAPABILITY``):
the same seed gives the same random stream, but the embedding and some ``nn.Linear`` weights differ
in the last few bits between hosts. So the toy's weights are compared with the original's within
:data:`WEIGHT_ULPS` units in the last place of each tensor's largest value; a wrong seed, order or
init would be off by the weights' own size.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch

from amkspec.ir import DType
from amkspec.models import MODELS, TOY, TOY_2L, ModelConfig, make_weights
from tests.conftest import FIXTURES

pytestmark = pytest.mark.numerics

WEIGHT_ULPS = 16
"""How far (in units in the last place of a tensor's largest value) a weight may be from the
original's: 4 measured between AVX2 and ``ATEN_CPU_CAPABILITY=default`` on an AMD EPYC."""


def assert_the_originals_weights(got: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> None:
    """``got`` holds the original's tensors (same names, dtypes, shapes), each within rounding."""
    assert list(got) == list(ref)
    for key in ref:
        a, b = np.asarray(got[key]), ref[key]
        assert a.dtype == b.dtype and a.shape == b.shape, key
        atol = WEIGHT_ULPS * float(np.spacing(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=key)


def test_toy_weights_are_the_originals() -> None:
    ref = np.load(FIXTURES / "toy-1L.weights.npz")
    got = make_weights(TOY)
    assert all(v.dtype == torch.float32 for v in got.values())
    assert_the_originals_weights({k: v.numpy() for k, v in got.items()}, {k: ref[k] for k in ref.files})


def test_toy_2l_shares_the_first_layer_stream_but_not_the_head() -> None:
    one, two = make_weights(TOY), make_weights(TOY_2L)
    assert torch.equal(one["embed.weight"], two["embed.weight"])
    assert torch.equal(one["layers.0.mlp.down_proj.weight"], two["layers.0.mlp.down_proj.weight"])
    assert not torch.equal(one["lm_head.weight"], two["lm_head.weight"])
    assert set(two) == set(TOY_2L.weight_shapes())


def test_shapes_follow_the_config() -> None:
    cfg = ModelConfig("tiny", vocab=32, hidden=16, n_layers=3, n_heads=4, n_kv_heads=1, head_dim=4,
                      intermediate=24)
    weights = make_weights(cfg)
    assert {k: tuple(v.shape) for k, v in weights.items()} == cfg.weight_shapes()
    bound = 1 / np.sqrt(cfg.hidden)
    assert float(weights["layers.2.attn.q_proj.weight"].abs().max()) <= bound
    assert torch.equal(weights["layers.1.post_norm"], torch.ones(16))


def test_seed_and_dtype() -> None:
    a, b = make_weights(TOY, seed=1), make_weights(TOY)
    assert not torch.equal(a["embed.weight"], b["embed.weight"])
    half = make_weights(TOY, DType.BF16)
    assert half["lm_head.weight"].dtype == torch.bfloat16
    assert torch.equal(half["lm_head.weight"], b["lm_head.weight"].to(torch.bfloat16))
    state = torch.random.get_rng_state()
    make_weights(TOY)
    assert torch.equal(state, torch.random.get_rng_state()), "the caller's RNG must not move"


def test_presets_and_bad_configs() -> None:
    assert {"toy", "toy-1L", "toy-2L", "medium", "small"} <= set(MODELS)
    assert MODELS["medium"].hidden == 1024 and MODELS["medium"].n_layers == 4
    with pytest.raises(ValueError, match="multiple"):
        ModelConfig("bad", vocab=8, hidden=8, n_layers=1, n_heads=3, n_kv_heads=2, head_dim=4,
                    intermediate=8)
    with pytest.raises(ValueError, match="even"):
        ModelConfig("bad", vocab=8, hidden=8, n_layers=1, n_heads=2, n_kv_heads=2, head_dim=3,
                    intermediate=8)
    with pytest.raises(ValueError, match="unsupported"):
        make_weights(TOY, DType.I8)
