"""Edge values: what the opcodes give at ±inf, NaN, overflow, and when a float is stored as an
integer (spec §7.10). The spec defines these values; the host does not.

torch's results at these points depend on its vector path and on the element count (GELU(+inf)
is NaN in one AVX-512 kernel and +inf in the scalar one), and C++ leaves an out-of-range float →
integer conversion undefined. So the reference functions compute with torch and then set the
results of the special inputs explicitly, with the functions below; the megakernel's device code
(``vm_cuda/ops``) implements the same rules. :data:`EDGE_CASES` is the table of these values:
the spec site shows it and the tests run it on both VMs, at several element counts.

The rules:

- an elementwise function takes its limit at ±inf (GELU and SiLU: +inf at +inf, 0 at −inf) and
  gives NaN for NaN; products and sums are IEEE-754 float32 (0 · inf = NaN);
- a row operation whose row statistic is not a finite float32 number gives NaN in the whole row:
  SOFTMAX when the row holds a NaN or +inf or is all −inf, RMSNORM when the mean of squares is not
  finite (a NaN or ±inf element, or squares that overflow float32), LAYERNORM when the mean or
  the variance is not finite;
- a float stored into an integer truncates toward zero; NaN, ±inf and values outside the
  intermediate type (int32 for I32 and I8, int64 for U8 and for ids and positions) give that
  type's minimum; I8 and U8 then keep the low 8 bits. BOOL is ``x ≠ 0`` (NaN is true). Float
  narrowing rounds to nearest even; F8E4M3 saturates at ±448, the other float types overflow to
  ±inf.

Zeros compare equal whatever their sign (the sign of a zero result is not specified).
"""

from __future__ import annotations

import math

import attrs
import torch

from amkspec.ir import DType, InstructionKind

Tensor = torch.Tensor
_K = InstructionKind
INF, NAN = math.inf, math.nan

INT32_MIN, INT64_MIN = -(2**31), -(2**63)
_VIA_INT32 = {torch.int32, torch.int8}
"""Integer dtypes a float reaches through int32 (the others go through int64)."""


def _limits(y: Tensor, x: Tensor, at_minus_inf: float) -> Tensor:
    """``y = f(x)`` with f's limits set at ±inf (+inf at +inf) and NaN at NaN."""
    if bool(torch.isfinite(x).all()):
        return y
    y = torch.where(x == INF, INF, y)
    y = torch.where(x == -INF, at_minus_inf, y)
    return torch.where(torch.isnan(x), NAN, y)


def gelu(x: Tensor) -> Tensor:
    """GELU, exact erf form, float32: GELU(+inf) = +inf, GELU(−inf) = 0, NaN → NaN."""
    return _limits(torch.nn.functional.gelu(x), x, 0.0)


def silu(x: Tensor) -> Tensor:
    """SiLU ``x · sigmoid(x)``, float32: SiLU(+inf) = +inf, SiLU(−inf) = 0, NaN → NaN."""
    return _limits(torch.nn.functional.silu(x), x, 0.0)


def softmax(x: Tensor, dim: int) -> Tensor:
    """Softmax along ``dim``; a line holding a NaN or +inf, or all −inf, is NaN."""
    y = torch.softmax(x, dim=dim)
    if x.numel() == 0 or bool(torch.isfinite(x).all()):
        return y
    bad = torch.isnan(x).any(dim, keepdim=True) | (x == INF).any(dim, keepdim=True)
    return torch.where(bad | (x == -INF).all(dim, keepdim=True), NAN, y)


def nan_rows(y: Tensor, statistic: Tensor) -> Tensor:
    """``y`` with NaN wherever the (broadcast) row statistic is not finite: the norms' rule."""
    finite = torch.isfinite(statistic)
    return y if bool(finite.all()) else torch.where(finite, y, NAN)


def _integer(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def to_integer(value: Tensor, dtype: torch.dtype) -> Tensor:
    """A float tensor converted to the integer ``dtype`` by the spec's rule (module doc): every
    conversion torch does here is in range, so no host decides a value."""
    wide = value.double()
    low, high = (-2147483649.0, 2147483648.0) if dtype in _VIA_INT32 else (-(2.0**63), 2.0**63)
    minimum = INT32_MIN if dtype in _VIA_INT32 else INT64_MIN
    inside = (wide > low) & (wide < high) if dtype in _VIA_INT32 else (wide >= low) & (wide < high)
    ints = torch.where(inside, wide.trunc(), 0.0).to(torch.int64)
    ints = torch.where(inside, ints, minimum)
    if dtype in (torch.int8, torch.uint8):
        low8 = (ints & 0xFF).to(torch.uint8)
        return low8.view(torch.int8) if dtype == torch.int8 else low8
    return ints.to(dtype)


def cast(value: Tensor, dtype: torch.dtype) -> Tensor:
    """``value`` as ``dtype``: floats into integers by :func:`to_integer`, the rest by torch."""
    if value.dtype.is_floating_point and _integer(dtype):
        return to_integer(value, dtype)
    return value.to(dtype)


def copy_into(out: Tensor, value: Tensor) -> None:
    """``out.copy_(value)`` (broadcasting) with the spec's float → integer rule."""
    out.copy_(cast(value, out.dtype) if value.dtype != out.dtype else value)


@attrs.frozen
class EdgeCase:
    """One row of the edge-value table: ``kind`` on one row ``x`` (and ``other``, its second
    input: SILU_MUL's ``up``, the norms' weight) stored into ``dtype`` gives ``out``."""

    kind: InstructionKind
    x: tuple[float, ...]
    out: tuple[float, ...]
    rule: str
    dtype: DType = DType.F32
    other: tuple[float, ...] | None = None


_CAST_IN = (NAN, INF, -INF, 3e9, -3e9, 2.7, -2.7, 300.5, -129.5, 255.9, -0.0)
_MIN = float(INT32_MIN)
_TRUNC = "truncate toward zero; NaN, ±inf, out of int32 range → INT32_MIN"

EDGE_CASES: tuple[EdgeCase, ...] = (
    EdgeCase(_K.GELU, (INF, -INF, NAN, 1e30, -1e30), (INF, 0.0, NAN, 1e30, 0.0),
             "limits: GELU(+inf) = +inf, GELU(−inf) = 0; NaN → NaN"),
    EdgeCase(_K.SILU_MUL, (INF, -INF, NAN, -1e30), (INF, 0.0, NAN, 0.0),
             "limits: SiLU(+inf) = +inf, SiLU(−inf) = 0; NaN → NaN; up = 1", other=(1.0, 1.0, 1.0, 1.0)),
    EdgeCase(_K.SILU_MUL, (-INF, INF), (NAN, INF), "the product is IEEE: 0 · inf = NaN", other=(INF, INF)),
    EdgeCase(_K.SOFTMAX, (INF, 1.0), (NAN, NAN), "a row holding +inf is NaN"),
    EdgeCase(_K.SOFTMAX, (NAN, 1.0), (NAN, NAN), "a row holding NaN is NaN"),
    EdgeCase(_K.SOFTMAX, (-INF, -INF), (NAN, NAN), "a row of −inf only is NaN"),
    EdgeCase(_K.SOFTMAX, (-INF, 0.0), (0.0, 1.0), "−inf entries get 0 when the row has a finite maximum"),
    EdgeCase(_K.SOFTMAX, (3e38, 3e38, -3e38), (0.5, 0.5, 0.0), "no overflow: exp(x − max) ≤ 1"),
    EdgeCase(_K.RMSNORM, (INF, 1.0), (NAN, NAN), "mean of squares not finite → NaN row", other=(1.0, 1.0)),
    EdgeCase(_K.RMSNORM, (NAN, 1.0), (NAN, NAN), "mean of squares NaN → NaN row", other=(1.0, 1.0)),
    EdgeCase(_K.RMSNORM, (1e20, 1.0), (NAN, NAN), "x² overflows float32 → NaN row", other=(1.0, 1.0)),
    EdgeCase(_K.RMSNORM, (0.0, 0.0), (0.0, 0.0), "a zero row stays zero (eps)", other=(1.0, 1.0)),
    EdgeCase(_K.LAYERNORM, (INF, 1.0), (NAN, NAN), "mean not finite → NaN row", other=(1.0, 1.0)),
    EdgeCase(_K.LAYERNORM, (1e20, 1.0), (NAN, NAN), "variance overflows float32 → NaN row",
             other=(1.0, 1.0)),
    EdgeCase(_K.LAYERNORM, (5.0, 5.0), (0.0, 0.0), "zero variance: (x − mean) = 0 (eps)", other=(1.0, 1.0)),
    EdgeCase(_K.COPY, _CAST_IN, (_MIN, _MIN, _MIN, _MIN, _MIN, 2, -2, 300, -129, 255, 0), _TRUNC, DType.I32),
    EdgeCase(_K.COPY, _CAST_IN, (0, 0, 0, 0, 0, 2, -2, 44, 127, -1, 0), _TRUNC + ", then the low 8 bits",
             DType.I8),
    EdgeCase(_K.COPY, _CAST_IN, (0, 0, 0, 0, 0, 2, 254, 44, 127, 255, 0),
             "truncate toward zero; NaN, ±inf, out of int64 range → INT64_MIN; then the low 8 bits",
             DType.U8),
    EdgeCase(_K.COPY, (NAN, INF, -INF, 0.5, -0.0), (1, 1, 1, 1, 0), "x ≠ 0 (NaN is true)", DType.BOOL),
    EdgeCase(_K.COPY, (INF, -INF, 1000.0, NAN), (448.0, -448.0, 448.0, NAN), "saturates at ±448",
             DType.F8E4M3),
    EdgeCase(_K.COPY, (INF, 1e5, -1e5, NAN), (INF, INF, -INF, NAN), "overflows to ±inf", DType.F8E5M2),
    EdgeCase(_K.COPY, (INF, 1e5, 65504.0, NAN), (INF, INF, 65504.0, NAN), "overflows to ±inf", DType.F16),
    EdgeCase(_K.COPY, (INF, -INF, NAN, 1e38), (INF, -INF, NAN, 9.969209968386869e37),
             "round to nearest even; ±inf and NaN kept", DType.BF16),
)
"""The edge-value table (spec §7.10), one row per rule."""
