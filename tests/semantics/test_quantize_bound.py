"""quantize's promise (spec §7.7): every weight dequantizes to within half a step of the stored
scale, for symmetric and asymmetric groups of any magnitude; a group whose scale float16 cannot
hold is refused."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import DType
from amkspec.semantics import dequantize, quantize

pytestmark = pytest.mark.numerics

F16_MAX = float(torch.finfo(torch.float16).max)


def _qdtype(bits: int) -> int:
    return int(DType.I4 if bits == 4 else DType.I8)


def _half_step_error(w: torch.Tensor, bits: int, group: int, symmetric: bool) -> float:
    """The largest ``|dequantized − w|`` in units of half the group's stored step, allowing for
    float32 rounding (a relative 2^-10 of the half step, 2^-23 of the weight)."""
    qw = quantize(w, bits, group, symmetric)
    k = w.shape[1]
    back = dequantize(qw.q, qw.scales, qw.zeros, _qdtype(bits), group, k).double()
    step = qw.scales.double().repeat_interleave(group, dim=1)[:, :k]
    allowed = 0.5 * step * (1 + 2.0**-10) + 2.0**-23 * w.double().abs()
    return float(((back - w.double()).abs() / allowed).max())


def _needed_scale(w: torch.Tensor, bits: int, group: int, symmetric: bool) -> float:
    """The largest exact scale of any group, as the quantize docstring defines it."""
    n, k = w.shape
    padded = torch.cat([w.double(), w.new_zeros(n, -k % group).double()], dim=1).reshape(n, -1, group)
    if symmetric:
        return float((padded.abs().amax(-1) / (7 if bits == 4 else 127)).max())
    lo, hi = padded.amin(-1), padded.amax(-1)
    return float(torch.maximum((hi - lo) / (2**bits - 1), lo.abs() / 2048).max())


@st.composite
def weights(draw: st.DrawFn) -> tuple[torch.Tensor, int]:
    """A ``[N, K]`` weight whose groups sit at offsets and spreads from 1e-12 to 1e9, and a group."""
    n, k, group = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 16))
    offset = draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(-12, 9))
    spread = 10.0 ** draw(st.integers(-12, 9)) * draw(st.sampled_from([0.0, 1e-3, 1.0]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    w = offset * draw(st.sampled_from([0.0, 1.0])) + spread * (2 * torch.rand(n, k, generator=g) - 1)
    return w.float(), group


@given(weights(), st.sampled_from([4, 8]), st.booleans())
def test_every_weight_is_within_half_a_step_or_the_scale_is_refused(
    case: tuple[torch.Tensor, int], bits: int, symmetric: bool,
) -> None:
    w, group = case
    needed = _needed_scale(w, bits, group, symmetric)
    try:
        error = _half_step_error(w, bits, group, symmetric)
    except ValueError:
        assert needed > F16_MAX * (1 - 2.0**-10)  # refused only when float16 cannot hold the scale
        return
    assert needed <= F16_MAX * (1 + 2.0**-10)
    assert error <= 1.0


@pytest.mark.parametrize("bits", [4, 8])
def test_an_asymmetric_group_far_from_zero(bits: int) -> None:
    w = 1.0 + 0.05 * torch.rand(2, 128, generator=torch.Generator().manual_seed(0))
    assert _half_step_error(w, bits, 128, symmetric=False) <= 1.0


@pytest.mark.parametrize("symmetric", [True, False])
def test_a_scale_the_nearest_float16_subnormal_would_shrink(symmetric: bool) -> None:
    # exact scale 1.45 · 2^-24: the nearest float16 (2^-24) would push the extreme levels ~1.45x out of range
    unit = torch.linspace(-1, 1, 32).repeat(2, 1)
    w = 1.1e-5 * unit if symmetric else 3e-6 + 1.1e-5 * (unit + 1)
    assert _half_step_error(w, 8, 32, symmetric) <= 1.0


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_a_scale_beyond_float16_is_refused(bits: int, symmetric: bool) -> None:
    w = torch.tensor([[1e7 if bits == 4 else 1e8, -3.0, 0.5, 2.0]])
    with pytest.raises(ValueError, match="float16"):
        quantize(w, bits, 4, symmetric)


def test_non_finite_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        quantize(torch.tensor([[1.0, math.nan]]), 8, 2)


def test_an_ordinary_group_stores_the_nearest_float16_scale() -> None:
    w = torch.randn(16, 64, generator=torch.Generator().manual_seed(1))
    qw = quantize(w, 8, 32)
    exact = w.reshape(16, 2, 32).abs().amax(-1) / 127
    assert torch.equal(qw.scales, exact.to(torch.float16))
