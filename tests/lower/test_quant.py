"""Quantized lowering: I4/I8 projections with F16 scales (spec §7.7; the lowering guide)."""

from __future__ import annotations

import math

import pytest
import torch

import amkspec
from amkspec.ir import BufferKind, DType, InstructionKind, ScheduleConfig
from amkspec.lower import LoweringError, lower
from amkspec.lower.decode import greedy_decode
from amkspec.models import TOY, QuantSpec, make_weights, quantize_weights
from amkspec.models.quant import quantized_keys


@pytest.mark.parametrize(("bits", "dtype"), [(4, DType.I4), (8, DType.I8)])
def test_quantized_program_structure(bits: int, dtype: DType) -> None:
    spec = QuantSpec(bits, 32)
    prog = lower("toy-2L", "rtx5090", ScheduleConfig(tiling={"gemv": {"N_tile": 16}}), quant=spec)
    assert amkspec.validate(prog).ok
    bufs = {b.name: b for b in prog.buffers}
    q = bufs["layers.1.mlp.down_proj.weight"]
    assert (q.dtype, q.shape, q.source) == (dtype, (64, 128), "layers.1.mlp.down_proj.weight")
    scales = bufs["layers.1.mlp.down_proj.weight.scales"]
    assert (scales.dtype, scales.shape, scales.kind) == (DType.F16, (64, 4), BufferKind.WEIGHT)
    assert bufs["lm_head.weight"].dtype is DType.F32
    down = next(t for t in prog.tasks if t.label == "L1.down_proj[t0]")
    assert down.params == {"K": 128, "N_tile": 16, "n_off": 0, "qdtype": int(dtype), "group": 32}
    assert down.est_bytes == (math.ceil(128 * bits / 8) + 2 * 4) * 16
    assert prog.meta["quant"] == {"group": 32, "bits": bits, "symmetric": True, "n_keys": 14}
    plain = lower("toy-2L", "rtx5090", ScheduleConfig(tiling={"gemv": {"N_tile": 16}}))
    assert prog.meta["weight_bytes"] < plain.meta["weight_bytes"]
    assert len(prog.tasks) == len(plain.tasks)


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_decode_agrees_with_the_dequantized_model(bits: int) -> None:
    config = ScheduleConfig(tiling={"attention": {"n_partitions": 2}})
    run = greedy_decode("toy-2L", [3, 141], 2, config=config, target="rtx5090", quant=QuantSpec(bits, 32))
    assert run.agree


def test_quantized_weights_are_close_and_complete() -> None:
    weights = make_weights(TOY)
    vm, eager = quantize_weights(TOY, weights, QuantSpec(8, 64))
    for key in quantized_keys(TOY):
        assert vm[key].dtype == torch.int8 and vm[f"{key}.scales"].dtype == torch.float16
        step = vm[f"{key}.scales"].float().max()
        assert float((eager[key] - weights[key]).abs().max()) <= float(step) / 2 + 1e-6
    assert torch.equal(vm["lm_head.weight"], weights["lm_head.weight"])
    packed = quantize_weights(TOY, weights, QuantSpec(4, 64))[0]["layers.0.attn.q_proj.weight"]
    assert packed.dtype == torch.uint8 and tuple(packed.shape) == (64, 32)


def test_quantized_lowering_rejects_batches_and_bad_specs() -> None:
    with pytest.raises(LoweringError, match="one sequence"):
        lower("toy", quant=QuantSpec(4), B=2)
    with pytest.raises(ValueError, match="bits"):
        QuantSpec(3)
    with pytest.raises(ValueError, match="group"):
        QuantSpec(4, 0)
    assert {t.op for t in lower("toy", quant=QuantSpec(4)).tasks} >= {InstructionKind.GEMV_TILE}
