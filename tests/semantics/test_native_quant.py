"""Native Q4_1 / Q8_0 weights: the affine (scale, offset) form reproduces gguf's float32
dequantization bit for bit (spec §7.9).

The argument: for a float16 scale ``d`` and an integer level ``q`` with ``|q| ≤ 255``, ``q · d`` is
exact in float32 (at most 8 + 11 significant bits, and a float16's smallest step 2^-24 is a normal
float32). Then ``fl(fl(q·d) + m) = RN(q·d + m)``, which is what gguf's numpy computes
(``(d * qs) + m``), what the semantics compute (two torch ops), and what the device's one
``fmaf`` computes. The lemma is checked exhaustively; the composite on every float16 bit pattern
of ``d`` and ``m`` met in a million random blocks, and on gguf-quantized weights.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as GT

from amkspec.ir import DType, InstructionKind, QuantFlags
from amkspec.models.ggml_blocks import BLOCK_BYTES, from_blocks, to_blocks
from amkspec.models.quant import Q4_1, Q8_0
from amkspec.semantics import OP_SEMANTICS, OpError, dequantize, pack_int4

K = InstructionKind
AFFINE = int(QuantFlags.AFFINE)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit patterns, any NaN equal to any NaN (numpy and torch may differ in NaN payloads)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | (a.view(np.uint32) == b.view(np.uint32))))


def test_level_times_float16_scale_is_exact_in_float32_for_every_scale_and_level() -> None:
    d = np.arange(2**16, dtype=np.uint16).view(np.float16)
    d = d[np.isfinite(d)].astype(np.float32)  # every finite float16: 63,488 of them
    levels = np.arange(-128, 256, dtype=np.float32)  # int8 levels and 0..255 (nibbles are 0..15)
    for chunk in np.array_split(levels, 8):
        exact = chunk[:, None].astype(np.float64) * d[None, :].astype(np.float64)
        assert np.array_equal((chunk[:, None] * d[None, :]).astype(np.float64), exact)


def _random_blocks(kind: str, n_blocks: int, seed: int) -> np.ndarray:
    """Raw blocks with uniformly random bytes: every float16 pattern (NaN, inf, subnormal) for d and m."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n_blocks, BLOCK_BYTES[kind]), dtype=np.uint8)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NaN / inf patterns
@pytest.mark.parametrize(("kind", "gtype"), [("Q4_1", GT.Q4_1), ("Q8_0", GT.Q8_0)])
def test_random_blocks_dequantize_as_gguf_does(kind: str, gtype: GT) -> None:
    blocks = _random_blocks(kind, 2**15, 1)  # 1M weights, 32k (d, m) pairs
    weight = from_blocks(kind, blocks, (2**10, 32 * 32))
    expected = gguf.quants.dequantize(blocks.reshape(2**10, -1), gtype)
    assert _bits_equal(weight.dequantize().numpy(), expected)
    assert np.array_equal(to_blocks(weight), blocks.reshape(2**10, -1))


@pytest.mark.parametrize(("kind", "gtype"), [("Q4_1", GT.Q4_1), ("Q8_0", GT.Q8_0)])
def test_gguf_quantized_weights_dequantize_bit_for_bit(kind: str, gtype: GT) -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((48, 160)).astype(np.float32) * np.logspace(-6, 3, 48, dtype=np.float32)[:, None]
    w[0] = 0.0
    w[1, :32] = -3.5  # a constant block: d = 0
    w[2] = np.float32(2.0**-20)  # float16 subnormal scales
    blocks = gguf.quants.quantize(w, gtype)
    weight = from_blocks(gtype, blocks, w.shape)
    assert weight.format is {"Q4_1": Q4_1, "Q8_0": Q8_0}[kind]
    assert _bits_equal(weight.dequantize().numpy(), gguf.quants.dequantize(blocks, gtype))


def test_q4_1_nibbles_are_repacked_to_the_ir_order() -> None:
    block = np.zeros((1, 20), np.uint8)
    block[0, :4] = np.array([1.0, 0.0], np.float16).view(np.uint8)  # d = 1, m = 0
    block[0, 4:] = np.arange(16, dtype=np.uint8) | (np.uint8(15) << 4)  # weights 0..15, then 16 × 15
    weight = from_blocks("Q4_1", block, (1, 32))
    assert weight.dequantize()[0].tolist() == [*range(16), *[15] * 16]
    assert weight.q[0, 0] == 0x10  # column 0 in the low nibble, column 1 in the high one


def test_bad_blocks_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="not imported natively"):
        from_blocks(GT.Q4_0, np.zeros(18, np.uint8), (1, 32))
    with pytest.raises(ValueError, match="not the 2 blocks"):
        from_blocks("Q8_0", np.zeros(34, np.uint8), (1, 64))
    with pytest.raises(ValueError, match="multiple of 32"):
        from_blocks("Q8_0", np.zeros(34, np.uint8), (2, 16))
    with pytest.raises(ValueError, match="raw uint8"):
        from_blocks("Q8_0", np.zeros(34, np.int8), (1, 32))


def test_take_rows_permutes_levels_and_tables_together() -> None:
    blocks = _random_blocks("Q4_1", 8, 3)
    weight = from_blocks("Q4_1", blocks, (4, 64))
    perm = [2, 0, 3, 1]
    assert _bits_equal(weight.take_rows(perm).dequantize().numpy(), weight.dequantize().numpy()[perm])


def _affine_operands() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Q4_1-style levels [3, 8] (group 4) and their (scale, offset) table [3, 2, 2]."""
    g = torch.Generator().manual_seed(0)
    nibbles = torch.randint(0, 16, (3, 8), generator=g)
    table = torch.randn(3, 2, 2, generator=g).to(torch.float16)
    expected = nibbles.float() * table[..., 0].float().repeat_interleave(4, -1) + table[..., 1].float(
    ).repeat_interleave(4, -1)
    return pack_int4(nibbles), table, expected


def test_dequant_affine_uses_raw_nibbles_times_scale_plus_offset() -> None:
    q, table, expected = _affine_operands()
    out = torch.zeros(3, 8)
    OP_SEMANTICS[K.DEQUANT]([q, table], [out], {"qdtype": int(DType.I4), "group": 4, "flags": AFFINE})
    assert torch.equal(out, expected)
    assert torch.equal(dequantize(q, table, None, int(DType.I4), 4, 8, affine=True), expected)


def test_gemv_affine_tile_matches_the_dequantized_product() -> None:
    q, table, w = _affine_operands()
    x = torch.randn(1, 8, generator=torch.Generator().manual_seed(1))
    out = torch.zeros(1, 3)
    params = {"K": 8, "N_tile": 2, "n_off": 1, "qdtype": int(DType.I4), "group": 4, "flags": AFFINE}
    OP_SEMANTICS[K.GEMV_TILE]([x, q, table], [out], params)
    assert out[0, 0] == 0 and torch.equal(out[:, 1:], x @ w[1:].T)


def test_affine_tables_of_the_wrong_form_raise() -> None:
    q, table, _ = _affine_operands()
    params = {"qdtype": int(DType.I4), "group": 4, "flags": AFFINE}
    with pytest.raises(OpError, match="zero points"):
        OP_SEMANTICS[K.DEQUANT]([q, table, table], [torch.zeros(3, 8)], params)
    with pytest.raises(OpError, match="pairs"):
        OP_SEMANTICS[K.DEQUANT]([q, torch.zeros(3, 3, dtype=torch.float16)], [torch.zeros(3, 8)], params)
    gemv = {"K": 8, "qdtype": int(DType.I4), "group": 4, "flags": AFFINE}
    with pytest.raises(OpError, match="pairs"):
        OP_SEMANTICS[K.GEMV_TILE]([torch.zeros(1, 8), q, table[..., 0]], [torch.zeros(1, 3)], gemv)


@pytest.mark.parametrize("form", ["symmetric", "zeros", "affine"])
def test_grouped_views_compute_what_expanded_tables_do(form: str) -> None:
    """``_by_group``'s view path (groups tile K) against the expanded-copy path, which a table with
    one extra (never used) group takes: the same bits."""
    g = torch.Generator().manual_seed(4)
    q = torch.randint(0, 256, (5, 48), generator=g, dtype=torch.int64).to(torch.uint8)
    shape = (5, 6, 2) if form == "affine" else (5, 6)
    table = (torch.randn(shape, generator=g) * 1e-3).to(torch.float16)
    zeros = torch.randint(0, 16, (5, 6), generator=g).to(torch.float16) if form == "zeros" else None
    longer = torch.cat([table, table[:, :1]], dim=1)
    longer_zeros = None if zeros is None else torch.cat([zeros, zeros[:, :1]], dim=1)
    affine = form == "affine"
    viewed = dequantize(q, table, zeros, int(DType.I4), 16, 96, affine)
    expanded = dequantize(q, longer, longer_zeros, int(DType.I4), 16, 96, affine)
    assert torch.equal(viewed.view(torch.int32), expanded.view(torch.int32))
