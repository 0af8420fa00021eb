"""GEMV/GEMM tiles (fp and quantized), DEQUANT, and the quantization round trips (spec §7)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from amkspec.ir import DType
from amkspec.ir import InstructionKind as K
from amkspec.semantics import OpError, dequantize, pack_int4, quantize, unpack_int4
from tests.semantics.helpers import DTYPES, close, rand, run

pytestmark = pytest.mark.numerics


def _loop_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out = np.zeros((x.shape[0], w.shape[0]))
    for m in range(x.shape[0]):
        for n in range(w.shape[0]):
            out[m, n] = sum(float(x[m, k]) * float(w[n, k]) for k in range(x.shape[1]))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", [K.GEMV_TILE, K.GEMM_TILE])
def test_tile_writes_only_its_columns(dtype: torch.dtype, kind: K) -> None:
    x, w = rand(3, 8, seed=1, dtype=dtype), rand(6, 8, seed=2, dtype=dtype)
    out = torch.full((3, 6), 7.0, dtype=dtype)
    run(kind, [x, w], out, K=8, N_tile=2, n_off=2, M_tile=1, m_off=0)
    expected = _loop_matmul(x.double().numpy(), w.double().numpy())
    close(out[:, 2:4], expected[:, 2:4], dtype, scale=4)
    assert torch.equal(out[:, [0, 1, 4, 5]], torch.full((3, 4), 7.0, dtype=dtype))


def test_tiles_compose_the_whole_product_with_bias() -> None:
    x, w, b = rand(1, 5, seed=3), rand(7, 5, seed=4), rand(7, seed=5)
    out = torch.zeros(1, 7)
    for n_off in range(0, 7, 3):
        run(K.GEMV_TILE, [x, w, b], out, K=5, N_tile=min(3, 7 - n_off), n_off=n_off)
    expected = _loop_matmul(x.double().numpy(), w.double().numpy()) + b.double().numpy()
    close(out, expected, torch.float32)


def test_tile_defaults_to_the_whole_matrix() -> None:
    x, w = rand(1, 4, seed=6), rand(3, 4, seed=7)
    out = run(K.GEMV_TILE, [x, w], torch.zeros(1, 3))
    close(out, _loop_matmul(x.double().numpy(), w.double().numpy()), torch.float32)


def test_tile_outside_the_output_is_an_error() -> None:
    with pytest.raises(OpError, match="outside"):
        run(K.GEMV_TILE, [torch.zeros(1, 4), torch.zeros(8, 4)], torch.zeros(1, 4), N_tile=4, n_off=4)


def test_int4_packing_puts_even_columns_in_the_low_nibble() -> None:
    nibbles = torch.tensor([[1, 2, 3, 4, 5]])
    packed = pack_int4(nibbles)
    assert packed.dtype == torch.uint8 and packed.tolist() == [[1 | 2 << 4, 3 | 4 << 4, 5]]
    assert unpack_int4(packed, 5).tolist() == nibbles.tolist()


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_quantization_round_trip_is_within_half_a_step(bits: int, symmetric: bool) -> None:
    w = rand(6, 20, seed=8)
    qw = quantize(w, bits, group=8, symmetric=symmetric)
    assert qw.scales.shape == (6, 3) and qw.scales.dtype == torch.float16
    qdtype = int(DType.I4 if bits == 4 else DType.I8)
    back = dequantize(qw.q, qw.scales, qw.zeros, qdtype, 8, 20)
    step = qw.scales.float().repeat_interleave(8, dim=1)[:, :20]
    assert bool(((back - w).abs() <= step * 0.5 * (1 + 2.0**-10)).all())


def test_symmetric_int4_levels_are_nibble_minus_8() -> None:
    nibbles = torch.tensor([[0, 8, 15, 3]])
    scales = torch.tensor([[0.5]], dtype=torch.float16)
    w = dequantize(pack_int4(nibbles), scales, None, int(DType.I4), 4, 4)
    assert w.tolist() == [[-4.0, 0.0, 3.5, -2.5]]


def test_asymmetric_int4_subtracts_only_the_zero_point() -> None:
    nibbles = torch.tensor([[0, 8, 15, 3]])
    scales, zeros = torch.tensor([[0.5]]), torch.tensor([[3.0]])
    w = dequantize(pack_int4(nibbles), scales, zeros, int(DType.I4), 4, 4)
    assert w.tolist() == [[(n - 3) * 0.5 for n in (0, 8, 15, 3)]]


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_gemv_tile_uses_the_dequantized_rows(bits: int) -> None:
    x, w = rand(1, 16, seed=9), rand(8, 16, seed=10)
    qw = quantize(w, bits, group=4)
    qdtype = int(DType.I4 if bits == 4 else DType.I8)
    out = torch.zeros(1, 8)
    for n_off in (0, 4):
        run(K.GEMV_TILE, [x, qw.q, qw.scales], out, K=16, N_tile=4, n_off=n_off, qdtype=qdtype, group=4)
    levels = unpack_int4(qw.q, 16).double().numpy() - 8 if bits == 4 else qw.q.double().numpy()
    real = levels * np.repeat(qw.scales.double().numpy(), 4, axis=1)
    close(out, _loop_matmul(x.double().numpy(), real), torch.float32)


def test_short_scale_table_repeats_its_last_group() -> None:
    q = torch.tensor([[1, 1, 1, 1, 1, 1]], dtype=torch.int8)
    w = dequantize(q, torch.tensor([[1.0, 2.0]]), None, int(DType.I8), 2, 6)
    assert w.tolist() == [[1.0, 1.0, 2.0, 2.0, 2.0, 2.0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dequant_op_unpacks_int4(dtype: torch.dtype) -> None:
    nibbles = torch.tensor([[0, 15, 9, 7], [8, 8, 1, 2]])
    scales = torch.tensor([[0.25, 1.0], [2.0, 0.5]])
    out = run(K.DEQUANT, [pack_int4(nibbles), scales], torch.zeros(2, 4, dtype=dtype), qdtype=7, group=2)
    expected = (nibbles.double().numpy() - 8) * np.repeat(scales.double().numpy(), 2, axis=1)
    close(out, expected, dtype)


def test_dequant_op_with_levels_and_zeros() -> None:
    q = torch.tensor([[10, 20, 30, 40]], dtype=torch.uint8)
    out = run(K.DEQUANT, [q, torch.tensor([[0.1, 0.2]]), torch.tensor([[10.0, 20.0]])], torch.zeros(1, 4),
              qdtype=6, group=2)
    np.testing.assert_allclose(out.numpy(), [[0.0, 1.0, 2.0, 4.0]], rtol=1e-6)


def test_dequant_op_reads_unpacked_levels_as_given_even_with_qdtype_4bit() -> None:
    q = torch.tensor([[-8, 7, 0, 3]], dtype=torch.int8)
    out = run(K.DEQUANT, [q, torch.tensor([[0.5]])], torch.zeros(1, 4), qdtype=7, group=4)
    assert out.tolist() == [[-4.0, 3.5, 0.0, 1.5]]
