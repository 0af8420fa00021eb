"""Weight-only quantization: storage, packing and dequantization (spec §7.7).

Levels are grouped along K (the reduction axis) in contiguous groups of ``group``
columns; column ``k`` uses scale ``k // group``. Scales (and zero points) are
float16 ``[N, n_groups]``.

* I8 symmetric: int8 levels in [−127, 127], ``w = q · scale``.
* I4 symmetric: levels in [−8, 7] stored as nibbles ``q + 8``, two per byte (low
  nibble = even column), ``w = (nibble − 8) · scale``.
* Asymmetric (with zero points): unsigned levels, ``w = (level − zero) · scale``;
  for I4 the level is the raw nibble (no −8), for I8 the levels are stored as U8.
* Affine (``flags`` bit :attr:`~amkspec.ir.QuantFlags.AFFINE`, the extension of §7.9: GGUF's
  Q4_1): the table holds (scale, offset) pairs ``[N, n_groups, 2]`` and ``w = level · scale +
  offset`` with the raw nibble (I4) or the stored integer (I8) as level. ``level · scale`` is exact
  in float32 for a float16 scale (at most 4 + 11, or 8 + 11, significant bits, never below
  2^-24), so the one rounding of the sum gives GGUF's ``d * q + m`` bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import torch

from amkspec.ir import DType, InstructionKind, QuantFlags
from amkspec.semantics.registry import OpError, Params, Tensor, arity, f32, int_param, semantics, store

_K = InstructionKind


@attrs.frozen
class QuantizedWeight:
    """A quantized ``[N, K]`` weight: levels (I4 packed uint8, I8 int8, asymmetric I8 uint8),
    float16 scales ``[N, n_groups]`` and, when asymmetric, float16 zero points."""

    q: Tensor
    scales: Tensor
    zeros: Tensor | None
    bits: int
    group: int
    k: int


def pack_int4(nibbles: Tensor) -> Tensor:
    """Pack ``[..., K]`` values in 0..15 into uint8 ``[..., ceil(K/2)]``; low nibble = even column."""
    n = nibbles.to(torch.uint8)
    if n.shape[-1] % 2:
        n = torch.cat([n, torch.zeros((*n.shape[:-1], 1), dtype=torch.uint8)], dim=-1)
    return n[..., 0::2] | (n[..., 1::2] << 4)


def unpack_int4(packed: Tensor, k: int) -> Tensor:
    """The nibbles (0..15) of packed bytes ``[..., ceil(K/2)]``, first ``k`` columns (uint8 for a
    uint8 ``packed``, else int64)."""
    if packed.dtype == torch.uint8:
        low, high = packed & 0xF, packed >> 4
    else:
        p = packed.to(torch.int64)
        low, high = p & 0xF, (p >> 4) & 0xF
    return torch.stack([low, high], dim=-1).reshape(*packed.shape[:-1], 2 * packed.shape[-1])[..., :k]


def expand_groups(table: Tensor, group: int, k: int) -> Tensor:
    """Repeat each group's value ``group`` times along the last dim; a short table repeats its last group."""
    if table.dim() == 0 or table.shape[-1] == 0:
        raise OpError(f"a scale or zero-point table {tuple(table.shape)} holds no group")
    t = f32(table).repeat_interleave(group, dim=-1)
    if t.shape[-1] < k:
        pad = t[..., -1:].expand(*t.shape[:-1], k - t.shape[-1])
        t = torch.cat([t, pad], dim=-1)
    return t[..., :k]


def levels(q: Tensor, qdtype: int, k: int, raw: bool) -> Tensor:
    """Float32 levels of stored ``q``: I4 unpacks nibbles (−8 unless ``raw``), others convert.

    An I4 ``q`` must hold ``ceil(K/2)`` packed bytes per row, any other ``q`` ``K`` levels."""
    packed = qdtype == DType.I4
    width = (k + 1) // 2 if packed else k
    if q.dim() == 0 or q.shape[-1] != width:
        held = f"{width} packed I4 bytes" if packed else f"{width} levels"
        raise OpError(f"quantized q {tuple(q.shape)} must hold {held} per row for K = {k}")
    if packed:
        nib = unpack_int4(q, k).float()
        return nib if raw else nib - 8.0
    return f32(q)


def dequantize(q: Tensor, scales: Tensor, zeros: Tensor | None, qdtype: int, group: int, k: int,
               affine: bool = False) -> Tensor:
    """Float32 ``[..., K]`` weights ``(level − zero) · scale`` (zero = 0 when absent), or
    ``level · scale + offset`` when ``affine`` (``scales`` then holds the pairs ``[..., n_groups, 2]``)."""
    if group <= 0:
        raise OpError(f"quantization group must be positive, got {group}")
    lv = levels(q, qdtype, k, raw=zeros is not None or affine)
    if affine:
        if scales.dim() < 2 or scales.shape[-1] != 2 or scales.shape[:-2] != lv.shape[:-1]:
            raise OpError(f"an affine scale table {tuple(scales.shape)} is not one row of (scale, offset) "
                          f"pairs [n_groups, 2] per row of q {tuple(lv.shape[:-1])}")
        return _by_group(lambda v, s, o: v * s + o, lv, group, k, scales[..., 0], scales[..., 1])
    for name, table in (("scales", scales), ("zeros", zeros)):
        if table is not None and table.shape[:-1] != lv.shape[:-1]:
            rows = f"one row of groups per row of q {tuple(q.shape)}"
            raise OpError(f"{name} {tuple(table.shape)} is not {rows}")
    if zeros is None:
        return _by_group(lambda v, s: v * s, lv, group, k, scales)
    return _by_group(lambda v, z, s: (v - z) * s, lv, group, k, zeros, scales)


def _by_group(formula: Callable[..., Tensor], lv: Tensor, group: int, k: int, *tables: Tensor) -> Tensor:
    """``formula(levels, *tables)`` with each table's value for group ``g`` applied to columns
    ``[g·group, (g+1)·group)`` (:func:`expand_groups`). When the groups tile K exactly it runs on
    ``[..., n_groups, group]`` views instead of expanded copies: the same float32 operations on
    the same values, element by element."""
    n = tables[0].shape[-1] if tables[0].dim() else 0
    if n > 0 and n * group == k and all(t.shape[-1] == n for t in tables):
        cols = [f32(t).unsqueeze(-1) for t in tables]
        return formula(lv.unflatten(-1, (n, group)), *cols).flatten(-2)
    return formula(lv, *(expand_groups(t, group, k) for t in tables))


def is_affine(params: Params, kind: InstructionKind) -> bool:
    """Whether ``flags`` holds :attr:`~amkspec.ir.QuantFlags.AFFINE` (a (scale, offset) table)."""
    return bool(int_param(params, "flags", kind, 0) & QuantFlags.AFFINE)


def dequant_rows(qin: list[Tensor], params: Params, n_off: int, n_tile: int, k: int) -> Tensor:
    """Rows ``n_off … n_off+n_tile−1`` of a quantized GEMV weight ``[qW, scales(, zeros)]``."""
    rows = slice(n_off, n_off + n_tile)
    q, scales = qin[0][rows], qin[1][rows]
    zeros = qin[2][rows] if len(qin) > 2 else None
    if n_off < 0 or q.shape[0] != n_tile or scales.shape[0] != n_tile:
        raise OpError(f"rows {n_off}..{n_off + n_tile - 1} outside a quantized W ({qin[0].shape[0]} rows)")
    affine = is_affine(params, _K.GEMV_TILE)
    if affine and zeros is not None:
        raise OpError("an affine (scale, offset) table takes no zero points")
    qdtype = int_param(params, "qdtype", _K.GEMV_TILE, 0)
    return dequantize(q, scales, zeros, qdtype, int_param(params, "group", _K.GEMV_TILE, k), k, affine)


_F16_MAX = float(torch.finfo(torch.float16).max)
_ZERO_MAX = 2048.0
"""The largest zero point float16 stores exactly (every integer up to 2^11 is a float16)."""


def _nearest16(scale: Tensor) -> Tensor:
    """The float16 nearest to each scale, at least the smallest positive float16 (2^-24)."""
    return scale.clamp_min(1e-8).to(torch.float16).clamp_min(2.0**-24)


def _next16(scale: Tensor) -> Tensor:
    """The next float16 above each positive finite float16 (its bit pattern plus one)."""
    return (scale.view(torch.int16) + 1).view(torch.float16)


def _attempt(
    padded: Tensor, scale: Tensor, symmetric: bool, bounds: tuple[int, int],
) -> tuple[Tensor, Tensor, Tensor]:
    """Unrounded levels and stored zero points against the float16 ``scale`` (zeros of 0 when
    symmetric), and per group whether every level lies within half a step of the level range."""
    s = scale.float()
    zero = torch.zeros_like(s) if symmetric else torch.round(-padded.amin(-1) / s).to(torch.float16).float()
    u = padded / s[..., None] + zero[..., None]
    fits = ((u >= bounds[0] - 0.5) & (u <= bounds[1] + 0.5)).all(-1)
    return u, zero, fits


def quantize(w: Tensor, bits: int, group: int = 128, symmetric: bool = True) -> QuantizedWeight:
    """Quantize a finite float ``[N, K]`` weight per group along K (spec §7.7); bits is 4 or 8.

    Levels are computed against the scale and zero point as stored (float16), so every weight
    dequantizes to within half a step (the stored scale) of its original value. The scale is
    ``max|w| / qmax`` (symmetric) or ``(max − min) / qmax`` (asymmetric, at least ``|min| / 2048``
    so that the zero point is a float16 integer), rounded to the nearest float16, or to the next
    float16 above where the nearest one would put a level more than half a step outside the level
    range. A group whose scale exceeds float16's largest finite value is a ``ValueError``."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if group <= 0:
        raise ValueError(f"group must be positive, got {group}")
    w = f32(w)
    if not bool(torch.isfinite(w).all()):
        raise ValueError("quantize needs finite weights")
    n, k = w.shape
    n_groups = math.ceil(k / group)
    padded = torch.cat([w, w.new_zeros(n, n_groups * group - k)], dim=1).reshape(n, n_groups, group)
    if symmetric:
        qmax = 7 if bits == 4 else 127
        bounds = (-qmax - (bits == 4), qmax)
        exact = padded.abs().amax(-1) / qmax
    else:
        bounds = (0, 2**bits - 1)
        lo, hi = padded.amin(-1), padded.amax(-1)
        exact = torch.maximum((hi - lo) / bounds[1], lo.abs() / _ZERO_MAX)
    scale = _nearest16(exact)
    u, zero, fits = _attempt(padded, scale, symmetric, bounds)
    if not bool(fits.all()):
        scale = torch.where(fits, scale, _next16(scale))  # one step up always fits (scale ≥ exact)
        u, zero, _ = _attempt(padded, scale, symmetric, bounds)
    if not bool(torch.isfinite(scale).all()):
        raise ValueError(f"a group's scale exceeds float16's largest value {_F16_MAX:g}")
    q = torch.round(u).clamp(*bounds).reshape(n, -1)[:, :k]
    if bits == 4:
        stored = pack_int4(q + 8 if symmetric else q)
    else:
        stored = q.to(torch.int8 if symmetric else torch.uint8)
    zeros = None if symmetric else zero.to(torch.float16)
    return QuantizedWeight(stored, scale, zeros, bits, group, k)


@semantics(
    _K.DEQUANT, family="Quantization",
    inputs="q, scales [..., n_groups] (affine: (scale, offset) pairs [..., n_groups, 2]), optional zeros",
    outputs="out [..., K]",
    params="qdtype (7 with a packed I4 q: nibbles are unpacked; otherwise q holds levels); group = K; "
    "flags bit 2 (AFFINE, extension): the table holds (scale, offset) pairs",
    shapes="K = out.numel / rows of q; q holds K levels or (uint8, qdtype 7) ceil(K/2) packed bytes "
    "per row; scales/zeros have ceil(K/group) columns (affine: ceil(K/group) pairs, no zeros)",
    formula="out = (level − zero) · scale per group, level = nibble − 8 (I4 symmetric), nibble "
    "(I4 with zeros) or q (otherwise); affine: out = level · scale + offset, level = nibble (I4) or q; "
    "float32, then cast",
)
def dequant(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7.7 DEQUANT, unpacking packed I4 nibbles (the original did not: see the differences pages)."""
    arity(inputs, outputs, _K.DEQUANT, 2, 1)
    q, out = inputs[0], outputs[0]
    if q.dim() == 0:
        raise OpError("DEQUANT: q must have at least one dimension")
    rows = q.shape[:-1]
    n_rows = math.prod(rows)
    if n_rows == 0 or out.numel() % n_rows:
        raise OpError(f"DEQUANT: output of {out.numel()} elements is not whole rows of q {tuple(q.shape)}")
    k = out.numel() // n_rows
    group = int_param(params, "group", _K.DEQUANT, k)
    affine = is_affine(params, _K.DEQUANT)
    if affine and len(inputs) > 2:
        raise OpError("DEQUANT: an affine (scale, offset) table takes no zero points")
    scales = _per_row(inputs[1], rows, "scales", affine)
    zeros = _per_row(inputs[2], rows, "zeros", False) if len(inputs) > 2 else None
    qdtype = int_param(params, "qdtype", _K.DEQUANT, 0)
    packed = q.dtype == torch.uint8 and q.shape[-1] == (k + 1) // 2
    if qdtype == DType.I4 and not packed:
        if q.shape[-1] != k:
            raise OpError(
                f"DEQUANT: q {tuple(q.shape)} holds neither ceil(K/2) = {(k + 1) // 2} packed I4 bytes "
                f"nor K = {k} levels per row"
            )
        qdtype = 0  # levels already unpacked (an I8/U8 buffer): read them as given, like the original
    store(out, dequantize(q, scales, zeros, qdtype, group, k, affine))


def _per_row(table: Tensor, rows: tuple[int, ...], name: str, pairs: bool) -> Tensor:
    """A DEQUANT scale or zero-point table as ``[*rows, n_groups]`` (``[*rows, n_groups, 2]`` of pairs)."""
    try:
        return table.reshape(*rows, -1, 2) if pairs else table.reshape(*rows, -1)
    except RuntimeError as exc:
        what = "(scale, offset) pairs" if pairs else "groups"
        raise OpError(f"DEQUANT: {name} {tuple(table.shape)} is not a row of {what} for each of q's "
                      f"{math.prod(rows)} rows") from exc
