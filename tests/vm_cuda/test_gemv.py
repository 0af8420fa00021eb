"""The warp-per-column GEMV path (vm_cuda/ops/gemv.cuh, spec §8.7) against the ReferenceVM on the CPU
build: every branch of it — 16-byte loads and the element-wise fallback, staged x in one piece and
in K chunks, several row groups, full and partial warps, int8 and int4 levels with and without zero
points, GGUF's affine Q4_1 and Q8_0, pipelined or not (the ``release-wide`` build) — and the thread-
per-pair path past AMK_GEMV_MAX_ROWS."""

from __future__ import annotations

import pytest
import torch

from amkspec.ir import BufferKind, DType, InstructionKind
from amkspec.semantics import quantize
from tests.vm_cuda.test_native_quant import _operands
from tests.vm_cuda.test_ops import FLOATS, Operand, gen, inp, out, tiled

pytestmark = pytest.mark.numerics  # the ReferenceVM's side goes through torch: run again under default
K = InstructionKind
BK = BufferKind
THREADS = (4, 40, 64)  # one warp of 4 lanes; a full warp and a partial one; two full warps
VARIANTS = ("release", "release-wide")  # pipelined groups of 4 loads; groups of 2 (blocks > 512 threads)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize(
    "rows, k",
    [(1, 64), (1, 20), (5, 96), (2, 3000), (3, 1704)],
    ids=["vec", "elementwise", "row-groups", "k-chunks", "k-chunks-3-rows"],
)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_float_weights(dt: DType, rows: int, k: int, threads: int, variant: str) -> None:
    g = gen(31)
    tiled(
        K.GEMM_TILE if rows > 1 else K.GEMV_TILE,
        [inp("x", dt, (rows, k), g), inp("w", dt, (9, k), g, BK.WEIGHT)],
        out("y", dt, (rows, 9)),
        {"K": k, "M_tile": rows, "m_off": 0},
        [(0, 4), (4, 5)],
        threads,
        variant=variant,
    )


@pytest.mark.parametrize("threads", (4, 64))
def test_more_rows_than_the_warp_path_takes(threads: int) -> None:
    g = gen(32)
    tiled(
        K.GEMM_TILE,
        [inp("x", DType.F32, (65, 16), g), inp("w", DType.BF16, (6, 16), g, BK.WEIGHT)],
        out("y", DType.F32, (65, 6)),
        {"K": 16, "M_tile": 65, "m_off": 0},
        [(0, 6)],
        threads,
    )


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize(
    "k, group, rows",
    [(256, 32, 1), (256, 64, 3), (96, 32, 1), (3072, 32, 2), (40, 8, 1)],
    ids=["vec", "vec-rows", "vec-short", "k-chunks", "elementwise"],
)
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("threads", (4, 40))
@pytest.mark.parametrize("variant", VARIANTS)
def test_quantized_weights(
    bits: int, k: int, group: int, rows: int, symmetric: bool, threads: int, variant: str
) -> None:
    g = gen(33)
    n = 5
    qw = quantize(torch.randn(n, k, generator=g), bits, group, symmetric)
    qdt = DType.I4 if bits == 4 else (DType.I8 if symmetric else DType.U8)
    ins = [
        inp("x", DType.F32, (rows, k), g),
        Operand("qw", qdt, (n, k), BK.WEIGHT, qw.q),
        Operand("scales", DType.F16, tuple(qw.scales.shape), BK.WEIGHT, qw.scales),
    ]
    if qw.zeros is not None:
        ins.append(Operand("zeros", DType.F16, tuple(qw.zeros.shape), BK.WEIGHT, qw.zeros))
    params = {"K": k, "qdtype": int(DType.I4 if bits == 4 else DType.I8), "group": group}
    tiled(K.GEMV_TILE, ins, out("y", DType.F32, (rows, n)), params, [(0, 2), (2, 3)], threads,
          unvalidated=not symmetric, variant=variant)


@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("threads", (4, 40))
@pytest.mark.parametrize("variant", VARIANTS)
def test_native_quantized_weights(kind: str, threads: int, variant: str) -> None:
    """GGUF's forms (spec §7.9): Q4_1's affine (scale, offset) pairs and Q8_0's int8, two x rows."""
    ins, params = _operands(kind, 12, 256, 9, finite=True)
    x = inp("x", DType.F32, (2, 256), gen(34))
    tiled(K.GEMV_TILE, [x, *ins], out("y", DType.F32, (2, 12)), {"K": 256, **params}, [(0, 5), (5, 7)],
          threads, variant=variant)
