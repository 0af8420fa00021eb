"""Deterministic weights: bit-identical to the original's for the toy (OPS_FACTS §8.2, §8.3)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from amkspec.ir import DType
from amkspec.models import MODELS, TOY, TOY_2L, ModelConfig, make_weights
from tests.conftest import FIXTURES


def test_toy_weights_are_bit_identical_to_the_original() -> None:
    ref = np.load(FIXTURES / "toy-1L.weights.npz")
    got = make_weights(TOY)
    assert list(got) == list(ref.keys())
    for key in ref:
        assert got[key].dtype == torch.float32
        assert np.array_equal(got[key].numpy(), ref[key]), key


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
