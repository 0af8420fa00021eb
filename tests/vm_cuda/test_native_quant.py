"""The megakernel's CPU build on native quantized weights (spec §7.9): the
affine (scale, offset) form of GGUF's Q4_1 and the symmetric I8 form of Q8_0 dequantize to the
ReferenceVM's (and gguf's) float32 values bit for bit, and quantized GEMV tiles agree with the
ReferenceVM within the output dtype's tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from amkspec.ir import DType, InstructionKind, QuantFlags
from amkspec.models.ggml_blocks import from_blocks
from amkspec.vm import ReferenceVM
from tests.vm_cuda.test_ops import BK, Operand, build, clone, inp, out, tiled
from vm_cuda import MegakernelVM

K = InstructionKind
AFFINE = int(QuantFlags.AFFINE)


def _blocks(kind: str, rows: int, k: int, seed: int, finite: bool) -> np.ndarray:
    """Random raw blocks: every byte random (any float16 d, m: NaN, inf, subnormal), or, when
    ``finite``, with d and m drawn from the finite float16 values."""
    rng = np.random.default_rng(seed)
    size = {"Q4_1": 20, "Q8_0": 34}[kind]
    blocks = rng.integers(0, 256, (rows * k // 32, size), dtype=np.uint8)
    if finite:
        head = 4 if kind == "Q4_1" else 2
        values = rng.standard_normal((blocks.shape[0], head // 2)).astype(np.float16) * np.float16(0.1)
        blocks[:, :head] = values.view(np.uint8)
    return blocks


def _operands(kind: str, rows: int, k: int, seed: int, finite: bool) -> tuple[list[Operand], dict[str, int]]:
    weight = from_blocks(kind, _blocks(kind, rows, k, seed, finite), (rows, k))
    fmt = weight.format
    ins = [Operand("q", fmt.qdtype, (rows, k), BK.WEIGHT, torch.from_numpy(weight.q)),
           Operand("t", DType.F16, weight.table.shape, BK.WEIGHT, torch.from_numpy(weight.table))]
    return ins, fmt.params()


@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("threads", [1, 4])
def test_dequant_is_bit_exact_on_every_float16_pattern(kind: str, threads: int) -> None:
    ins, params = _operands(kind, 64, 256, 5, finite=False)
    prog, weights, inputs, kv = build(K.DEQUANT, ins, [out("y", DType.F32, (64, 256))], params)
    ref = ReferenceVM(prog).run(clone(weights), clone(inputs), clone(kv))["y"]
    got = MegakernelVM(prog, backend="cpu", threads_per_block=threads).run(weights, inputs, clone(kv))["y"]
    same = (got.isnan() & ref.isnan()) | (got.view(torch.int32) == ref.view(torch.int32))
    assert bool(same.all())


@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("threads", [1, 4])
def test_quantized_gemv_tiles_agree_with_the_reference(kind: str, threads: int) -> None:
    ins, params = _operands(kind, 40, 96, 6, finite=True)
    x = inp("x", DType.F32, (1, 96), torch.Generator().manual_seed(7))
    tiled(K.GEMV_TILE, [x, *ins], out("y", DType.F32, (1, 40)), {"K": 96, **params},
          [(0, 16), (16, 16), (32, 8)], threads)


def test_affine_int8_levels_and_a_float16_output() -> None:
    g = torch.Generator().manual_seed(8)
    levels = torch.randint(-128, 128, (6, 64), generator=g).to(torch.int8)
    q = Operand("q", DType.I8, (6, 64), BK.WEIGHT, levels)
    table = Operand("t", DType.F16, (6, 2, 2), BK.WEIGHT, (torch.randn(6, 2, 2, generator=g) * 0.01).half())
    x = inp("x", DType.F16, (1, 64), g)
    tiled(K.GEMV_TILE, [x, q, table], out("y", DType.F16, (1, 6)),
          {"K": 64, "qdtype": int(DType.I8), "group": 32, "flags": AFFINE}, [(0, 3), (3, 3)], 4)
