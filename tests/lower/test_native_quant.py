"""Lowering weights given natively as Q4_1 / Q8_0 (spec §7.9): a synthetic model
quantized by gguf's own quantizers runs on the ReferenceVM and the megakernel's CPU build, and agrees
with the eager model on gguf's dequantized weights."""

from __future__ import annotations

from typing import Any

import gguf
import pytest
import torch
from gguf import GGMLQuantizationType as GT

import amkspec
from amkspec.ir import BufferKind, DType, InstructionKind, QuantFlags, ScheduleConfig
from amkspec.lower import LoweringError, lower
from amkspec.lower.decode import greedy_decode, step_inputs
from amkspec.models import TOY_2L, EagerDecoder, compare_logits, make_weights
from amkspec.models.ggml_blocks import from_blocks, to_blocks
from amkspec.models.quant import PROJECTIONS, Q4_1, Q8_0, NativeQuant, QuantTensor, native_weights
from amkspec.vm import ReferenceVM

Op = InstructionKind
CONFIG = ScheduleConfig(tiling={"gemv": {"N_tile": 16}})


def ggml(weight: torch.Tensor, kind: GT) -> QuantTensor:
    """``weight`` quantized by gguf's numpy quantizer, as a native weight."""
    w = weight.float().numpy()
    return from_blocks(kind, gguf.quants.quantize(w, kind), w.shape)


def gguf_model(head: GT | None = GT.Q8_0) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """toy-2L as a Q4_1 GGUF file would hold it: Q4_1 projections, a Q8_0 token table, the lm head
    in ``head`` (None: float); and the weights gguf dequantizes them to."""
    weights: dict[str, Any] = make_weights(TOY_2L)
    for n in range(TOY_2L.n_layers):
        for p in PROJECTIONS:
            weights[f"layers.{n}.{p}.weight"] = ggml(weights[f"layers.{n}.{p}.weight"], GT.Q4_1)
    weights["embed.weight"] = ggml(weights["embed.weight"], GT.Q8_0)
    if head is not None:
        weights["lm_head.weight"] = ggml(weights["lm_head.weight"], head)
    exact = {k: torch.from_numpy(gguf.quants.dequantize(to_blocks(v), GT[v.format.name]))
             if isinstance(v, QuantTensor) else v for k, v in weights.items()}
    return weights, exact


def test_native_program_structure() -> None:
    weights, _ = gguf_model()
    layout, vm = native_weights(weights)
    prog = lower(TOY_2L, "rtx5090", CONFIG, quant=layout)
    assert amkspec.validate(prog).ok
    bufs = {b.name: b for b in prog.buffers}
    down = bufs["layers.1.mlp.down_proj.weight"]
    assert (down.dtype, down.shape) == (DType.I4, (64, 128))
    assert (bufs["layers.1.mlp.down_proj.weight.scales"].shape, bufs["embed.weight.scales"].shape) == (
        (64, 4, 2), (256, 2))
    assert bufs["embed.weight"].dtype is DType.I8 and bufs["lm_head.weight"].dtype is DType.I8
    task = next(t for t in prog.tasks if t.label == "L1.down_proj[t0]")
    assert task.params == {"K": 128, "N_tile": 16, "n_off": 0, "qdtype": 7, "group": 32,
                           "flags": int(QuantFlags.AFFINE)}
    embed = [t for t in prog.tasks if t.label.startswith("embed")]
    assert [(t.op, t.label) for t in embed] == [(Op.EMBED, "embed.q"), (Op.EMBED, "embed.scales"),
                                                 (Op.DEQUANT, "embed")]
    assert embed[2].params == {"qdtype": 6, "group": 32}
    assert prog.meta["quant"] == {"native": {"Q4_1": 14, "Q8_0": 2}}
    assert set(vm) == {b.source or b.name for b in prog.buffers if b.kind is BufferKind.WEIGHT}


@pytest.mark.parametrize("head", [GT.Q8_0, GT.Q4_1, None])
def test_native_step_matches_the_eager_model_on_gguf_weights(head: GT | None) -> None:
    weights, exact = gguf_model(head)
    layout, vm = native_weights(weights)
    prog = lower(TOY_2L, "rtx5090", CONFIG, quant=layout)
    out = ReferenceVM(prog).run(vm, step_inputs(0, [7]))
    expected = EagerDecoder(TOY_2L, exact, DType.F32).step([7])
    check = compare_logits(out["logits"], expected, DType.F32)
    assert check.passed, check
    assert int(out["logits"].argmax()) == int(expected.argmax())


def test_the_dequantized_weights_are_gguf_s_bit_for_bit() -> None:
    weights, exact = gguf_model()
    for key, value in weights.items():
        if isinstance(value, QuantTensor):
            assert torch.equal(value.dequantize().view(torch.int32), exact[key].view(torch.int32)), key


FUSED = ScheduleConfig(fusion_grouping=[["gate", "up", "silu"], ["o", "residual"], ["down", "residual"]],
                       page_allocation="graph_color", tiling={"attention": {"n_partitions": 2}})


@pytest.mark.parametrize("vm", ["reference", "cpu-kernel"])
@pytest.mark.parametrize("config", [ScheduleConfig(tiling={"attention": {"n_partitions": 2}}), FUSED],
                         ids=["split-kv", "fused-paged"])
def test_native_greedy_decode_agrees_on_every_step(vm: str, config: ScheduleConfig) -> None:
    weights, _ = gguf_model()
    make_vm = None
    if vm == "cpu-kernel":
        from vm_cuda import MegakernelVM

        def make_vm(prog: amkspec.MegakernelProgram) -> Any:
            return MegakernelVM(prog, backend="cpu")

    run = greedy_decode(TOY_2L, [3, 141], 3, config=config, target="rtx5090", weights=weights,
                        make_vm=make_vm)
    assert run.agree and len(run.generated[0]) == 3
    assert all(s.vm_next == s.eager_next for s in run.steps)


def test_a_native_layout_records_its_formats_and_keeps_float_weights() -> None:
    layout = NativeQuant({"layers.0.attn.q_proj.weight": Q4_1})
    prog = lower(TOY_2L, quant=layout)
    bufs = {b.name: b for b in prog.buffers}
    assert bufs["layers.0.attn.q_proj.weight"].dtype is DType.I4
    assert bufs["layers.0.attn.k_proj.weight"].dtype is DType.F32
    assert bufs["embed.weight"].dtype is DType.F32 and prog.meta["quant"] == {"native": {"Q4_1": 1}}
    assert Q8_0.params() == {"qdtype": 6, "group": 32}


def test_a_native_layout_of_weights_the_lowering_cannot_quantize_is_refused() -> None:
    with pytest.raises(LoweringError, match=r"cannot store final_norm, layers\.9"):
        lower(TOY_2L, quant=NativeQuant({"final_norm": Q8_0, "layers.9.attn.q_proj.weight": Q4_1}))
    with pytest.raises(LoweringError, match="one sequence"):
        lower(TOY_2L, quant=NativeQuant({"embed.weight": Q8_0}), B=2)
