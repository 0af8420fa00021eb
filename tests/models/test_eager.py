"""The eager decoder against the original's outputs, and its own consistency (OPS_FACTS §8, §11)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.ir import DType
from amkspec.models import TOY, TOY_2L, EagerDecoder, compare_logits, make_weights
from amkspec.models.eager import apply_rope, rope_tables
from tests.conftest import FIXTURES

pytestmark = pytest.mark.numerics

WEIGHTS = make_weights(TOY)
WEIGHTS_2L = make_weights(TOY_2L)
TOKENS = [7, 25, 103]
"""The fixture's decode: token k+1 is the argmax of step k."""


def _expected() -> dict[str, np.ndarray]:
    return dict(np.load(FIXTURES / "toy1L__default.expected.npz"))


def test_decode_matches_the_original_reference_vm() -> None:
    expected = _expected()
    model = EagerDecoder(TOY, WEIGHTS)
    for step, token in enumerate(TOKENS):
        logits = model.step([token])
        ref = torch.from_numpy(expected[f"s{step}__logits"])
        check = compare_logits(logits, ref, DType.F32)
        assert check.passed, check
        if step + 1 < len(TOKENS):
            assert int(logits.argmax()) == TOKENS[step + 1]
    assert torch.allclose(model.k_cache[0][0], torch.from_numpy(expected["s2__L0.kcache"]), atol=1e-5)
    assert torch.allclose(model.v_cache[0][0], torch.from_numpy(expected["s2__L0.vcache"]), atol=1e-5)


@pytest.mark.parametrize(("dtype", "atol"), [(DType.F16, 1e-2), (DType.BF16, 2e-2)])
def test_half_precision_stays_within_its_tolerance(dtype: DType, atol: float) -> None:
    expected = _expected()
    model = EagerDecoder(TOY, WEIGHTS, dtype)
    for step, token in enumerate(TOKENS):
        logits = model.step([token])
        assert logits.dtype != torch.float32
        assert compare_logits(logits, torch.from_numpy(expected[f"s{step}__logits"]), dtype).passed


@settings(max_examples=10)
@given(st.lists(st.integers(0, 255), min_size=1, max_size=6))
def test_cached_decode_equals_the_last_prefill_row(tokens: list[int]) -> None:
    stepper = EagerDecoder(TOY_2L, WEIGHTS_2L)
    rows = torch.cat([stepper.step([t]) for t in tokens])
    full = EagerDecoder(TOY_2L, WEIGHTS_2L).prefill(tokens)
    assert torch.allclose(rows, full, atol=2e-5, rtol=1e-5)


def test_batched_step_equals_separate_sequences() -> None:
    seqs = [[1, 2, 3], [200, 17, 9]]
    batched = EagerDecoder(TOY_2L, WEIGHTS_2L)
    single = [EagerDecoder(TOY_2L, WEIGHTS_2L) for _ in seqs]
    for i in range(3):
        out = batched.step([s[i] for s in seqs])
        alone = torch.cat([m.step([s[i]]) for m, s in zip(single, seqs, strict=True)])
        assert torch.allclose(out, alone, atol=1e-5)
    with pytest.raises(ValueError, match="batch changed"):
        batched.step([1])


def test_rope_is_identity_at_zero_and_rotates_pairs() -> None:
    x = torch.randn(1, 2, TOY.head_dim)
    cos, sin = rope_tables(TOY, torch.tensor([0]))
    assert torch.equal(apply_rope(x, cos, sin), x)
    cos, sin = rope_tables(TOY, torch.tensor([3]))
    half = TOY.head_dim // 2
    y = apply_rope(x, cos, sin)
    angle = 3.0  # i = 0: inv_freq 1
    expect = x[..., 0] * np.cos(angle) - x[..., half] * np.sin(angle)
    assert torch.allclose(y[..., 0], expect, atol=1e-6)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5)


def test_position_limit_and_missing_weights() -> None:
    model = EagerDecoder(TOY, WEIGHTS)
    model.pos = TOY.max_seq
    with pytest.raises(ValueError, match="max_seq"):
        model.step([1])
    with pytest.raises(KeyError, match="lm_head"):
        EagerDecoder(TOY, {k: v for k, v in WEIGHTS.items() if k != "lm_head.weight"})


def test_compare_logits_verdicts() -> None:
    ref = torch.linspace(-1, 1, 16).reshape(1, 16)
    assert compare_logits(ref + 5e-5, ref).passed
    assert not compare_logits(ref + 1e-3, ref).passed
    assert compare_logits(ref + 1e-3, ref, DType.F16).passed
    flipped = ref.clone()
    flipped[0, 0] = 2.0
    assert compare_logits(flipped, ref, DType.I32).top1_agreement == 0.0
    assert not compare_logits(ref[:, :8], ref).passed
    nan = ref.clone()
    nan[0, 3] = float("nan")
    assert not compare_logits(nan, ref).passed
