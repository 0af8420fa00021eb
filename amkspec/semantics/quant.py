"""Weight-only quantization: storage, packing and dequantization (spec §7.7).

Levels are grouped along K (the reduction axis) in contiguous groups of ``group``
columns; column ``k`` uses scale ``k // group``. Scales (and zero points) are
float16 ``[N, n_groups]``.

* I8 symmetric: int8 levels in [−127, 127], ``w = q · scale``.
* I4 symmetric: levels in [−8, 7] stored as nibbles ``q + 8``, two per byte (low
  nibble = even column), ``w = (nibble − 8) · scale``.
* Asymmetric (with zero points): unsigned levels, ``w = (level − zero) · scale``;
  for I4 the level is the raw nibble (no −8), for I8 the levels are stored as U8.
"""

from __future__ import annotations

import math

import attrs
import torch

from amkspec.ir import DType, InstructionKind
from amkspec.semantics.registry import OpError, Params, Tensor, arity, f32, semantics, store

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
    """The nibbles (0..15, int64) of packed uint8 ``[..., ceil(K/2)]``, first ``k`` columns."""
    p = packed.to(torch.int64)
    return torch.stack([p & 0xF, (p >> 4) & 0xF], dim=-1).reshape(*p.shape[:-1], -1)[..., :k]


def expand_groups(table: Tensor, group: int, k: int) -> Tensor:
    """Repeat each group's value ``group`` times along the last dim; a short table repeats its last group."""
    t = f32(table).repeat_interleave(group, dim=-1)
    if t.shape[-1] < k:
        pad = t[..., -1:].expand(*t.shape[:-1], k - t.shape[-1])
        t = torch.cat([t, pad], dim=-1)
    return t[..., :k]


def levels(q: Tensor, qdtype: int, k: int, has_zeros: bool) -> Tensor:
    """Float32 levels of stored ``q``: I4 unpacks nibbles (−8 when symmetric), others convert."""
    if qdtype == DType.I4:
        nib = unpack_int4(q, k).float()
        return nib if has_zeros else nib - 8.0
    return f32(q)[..., :k]


def dequantize(q: Tensor, scales: Tensor, zeros: Tensor | None, qdtype: int, group: int, k: int) -> Tensor:
    """Float32 ``[..., K]`` weights ``(level − zero) · scale`` (zero = 0 when absent)."""
    if group <= 0:
        raise OpError(f"quantization group must be positive, got {group}")
    lv = levels(q, qdtype, k, zeros is not None)
    if lv.shape[-1] != k:
        raise OpError(f"quantized levels hold {lv.shape[-1]} columns, expected K = {k}")
    if zeros is not None:
        lv = lv - expand_groups(zeros, group, k)
    return lv * expand_groups(scales, group, k)


def dequant_rows(qin: list[Tensor], params: Params, n_off: int, n_tile: int, k: int) -> Tensor:
    """Rows ``n_off … n_off+n_tile−1`` of a quantized GEMV weight ``[qW, scales(, zeros)]``."""
    rows = slice(n_off, n_off + n_tile)
    q, scales = qin[0][rows], qin[1][rows]
    zeros = qin[2][rows] if len(qin) > 2 else None
    if n_off < 0 or q.shape[0] != n_tile or scales.shape[0] != n_tile:
        raise OpError(f"rows {n_off}..{n_off + n_tile - 1} outside a quantized W ({qin[0].shape[0]} rows)")
    return dequantize(q, scales, zeros, int(params.get("qdtype", 0)), int(params.get("group", k)), k)


def _stored(scale: Tensor) -> Tensor:
    """Scales as they will be stored (float16), so levels are computed against the stored value."""
    return scale.clamp_min(1e-8).to(torch.float16).float().clamp_min(2.0**-24)


def quantize(w: Tensor, bits: int, group: int = 128, symmetric: bool = True) -> QuantizedWeight:
    """Quantize a float ``[N, K]`` weight per group along K (spec §7.7); bits is 4 or 8.

    Levels are computed against the float16-rounded scale that is stored, so every
    weight dequantizes to within half a step of its original value."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    w = f32(w)
    n, k = w.shape
    n_groups = math.ceil(k / group)
    padded = torch.cat([w, w.new_zeros(n, n_groups * group - k)], dim=1).reshape(n, n_groups, group)
    if symmetric:
        qmax = 7 if bits == 4 else 127
        scale = _stored(padded.abs().amax(-1) / qmax)
        q = torch.round(padded / scale[..., None]).clamp(-qmax - (bits == 4), qmax)
        zeros = None
    else:
        qmax = 2**bits - 1
        lo, hi = padded.amin(-1), padded.amax(-1)
        scale = _stored((hi - lo) / qmax)
        zero = torch.round(-lo / scale)
        q = torch.round(padded / scale[..., None] + zero[..., None]).clamp(0, qmax)
        zeros = zero.to(torch.float16)
    q = q.reshape(n, -1)[:, :k]
    if bits == 4:
        stored = pack_int4(q + 8 if symmetric else q)
    else:
        stored = q.to(torch.int8 if symmetric else torch.uint8)
    return QuantizedWeight(stored, scale.to(torch.float16), zeros, bits, group, k)


@semantics(
    _K.DEQUANT, family="Quantization", inputs="q, scales [..., n_groups], optional zeros",
    outputs="out [..., K]",
    params="qdtype (7 with a packed I4 q: nibbles are unpacked; otherwise q holds levels); group = K",
    shapes="K = out.numel / rows of q; scales/zeros have ceil(K/group) columns",
    formula="out = (level − zero) · scale per group, level = nibble − 8 (I4 symmetric), nibble "
    "(I4 with zeros) or q (otherwise); float32, then cast",
)
def dequant(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7.7 DEQUANT, unpacking packed I4 nibbles (the original did not: see the differences pages)."""
    arity(inputs, outputs, _K.DEQUANT, 2, 1)
    q, out = inputs[0], outputs[0]
    rows = q.shape[:-1] if q.dim() else ()
    n_rows = math.prod(rows)
    if n_rows == 0 or out.numel() % n_rows:
        raise OpError(f"DEQUANT: output of {out.numel()} elements is not whole rows of q {tuple(q.shape)}")
    k = out.numel() // n_rows
    group = int(params.get("group", k))
    scales = inputs[1].reshape(*rows, -1)
    zeros = inputs[2].reshape(*rows, -1) if len(inputs) > 2 else None
    qdtype = int(params.get("qdtype", 0))
    packed = q.dtype == torch.uint8 and q.dim() > 0 and q.shape[-1] == (k + 1) // 2
    if qdtype == DType.I4 and not packed:
        qdtype = 0  # levels already unpacked (an I8/U8 buffer): read them as given, like the original
    store(out, dequantize(q, scales, zeros, qdtype, group, k))
