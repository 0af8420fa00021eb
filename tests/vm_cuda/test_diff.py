"""The megakernel's CPU build reproduces the ReferenceVM (spec §8.8) within ``vm_cuda.compare``'s
per-dtype tolerances: bundled examples, the original's fixtures, lowered toy models across decode
steps with the KV caches threaded, and hypothesis-generated valid programs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from amkspec import load
from amkspec.ir import BufferKind, DType, MegakernelProgram, ScheduleConfig
from amkspec.lower import lower, resolve_model
from amkspec.lower.decode import step_inputs
from amkspec.models import QuantSpec, make_weights
from amkspec.models.quant import quantize_weights
from amkspec.programs.strategies import valid_programs
from amkspec.vm import ReferenceVM, RefusedProgram
from amkspec.vm.operands import operands
from tests.conftest import EXAMPLES, FIXTURES
from vm_cuda import MegakernelVM
from vm_cuda.compare import compare_outputs

pytestmark = pytest.mark.numerics


def _kv(program: MegakernelProgram, out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {b.name: out[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}


def _same(program: MegakernelProgram, weights: Any, inputs: Any, kv: Any = None) -> dict[str, torch.Tensor]:
    """Run both VMs; assert the kernel's outputs have the reference's keys, shapes, dtypes and values."""
    ref = ReferenceVM(program).run(weights, inputs, kv)
    vm = MegakernelVM(program, "cpu")
    got = vm.run(weights, inputs, kv)
    assert vm.last_status is not None and vm.last_status.kind == "OK"
    assert list(got) == list(ref)
    assert compare_outputs(got, ref) == []
    return ref


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_every_bundled_example(path: Path) -> None:
    program = load(path)
    if path.name.startswith("rejected_"):
        with pytest.raises(RefusedProgram):
            MegakernelVM(program, "cpu")
        return
    weights, inputs = operands(program)
    _same(program, weights, inputs)


def _fixture_arrays(name: str) -> dict[str, np.ndarray]:
    with np.load(FIXTURES / name) as z:
        return {k: z[k] for k in z.files}


def test_the_original_toy_fixture_across_three_decode_steps() -> None:
    weights = _fixture_arrays("toy-1L.weights.npz")
    inputs, expected = (
        _fixture_arrays("toy1L__default.inputs.npz"),
        _fixture_arrays("toy1L__default.expected.npz"),
    )
    files = ["toy1L__default.json", "toy1L__default.pos1.json.gz", "toy1L__default.pos2.json.gz"]
    kv = None
    for step, name in enumerate(files):
        program = load(FIXTURES / name)
        feed = {k.split("__", 1)[1]: v for k, v in inputs.items() if k.startswith(f"s{step}__")}
        vm = MegakernelVM(program, "cpu")
        got = vm.run(weights, feed, kv)
        ref = _same(program, weights, feed, kv)
        assert compare_outputs(got, ref) == []
        logits = torch.from_numpy(expected[f"s{step}__logits"])
        torch.testing.assert_close(got["logits"].reshape(logits.shape), logits, atol=1e-4, rtol=1e-4)
        kv = _kv(program, got)


def test_the_original_split_kv_fixture() -> None:
    program = load(FIXTURES / "toy2L__splitkv4__pos47.json")
    weights, inputs = operands(program, seed=3)
    _same(program, weights, inputs)


DECODES = [
    ("toy", DType.F32, None, None),
    ("toy", DType.F16, None, None),
    ("toy-2L", DType.BF16, None, None),
    ("toy", DType.F32, QuantSpec(4, 32), None),
    ("toy", DType.BF16, QuantSpec(8, 64), None),
    ("toy-2L", DType.F32, None, ScheduleConfig(tiling={"attention": {"n_partitions": 4}})),
]


@pytest.mark.parametrize(
    ("model", "dtype", "quant", "config"), DECODES, ids=lambda v: getattr(v, "name", None) or str(v)
)
def test_lowered_toy_models_across_decode_steps_with_kv_threaded(
    model: str, dtype: DType, quant: QuantSpec | None, config: ScheduleConfig | None
) -> None:
    m = resolve_model(model)
    weights: dict[str, Any] = dict(make_weights(m))
    if quant is not None:
        weights = dict(quantize_weights(m, weights, quant)[0])
    ref_vm_kv: dict[str, torch.Tensor] | None = None
    kernel_kv: dict[str, torch.Tensor] | None = None
    token = 7
    for pos in range(3 if config is None else 18):
        program = lower(m, "rtx5090" if config else None, config, pos=pos, dtype=dtype, quant=quant)
        feed = step_inputs(pos, [token])
        ref = ReferenceVM(program).run(weights, feed, ref_vm_kv)
        got = MegakernelVM(program, "cpu").run(weights, feed, kernel_kv)
        assert compare_outputs(got, ref) == [], pos
        ref_vm_kv, kernel_kv = _kv(program, ref), _kv(program, got)
        token = int(ref["logits"].float().argmax())


def test_kv_caches_carry_over_between_launches_like_the_reference_vm() -> None:
    m = resolve_model("toy")
    weights = make_weights(m)
    program = lower(m, None, None, pos=0)
    ref_vm, kernel_vm = ReferenceVM(program), MegakernelVM(program, "cpu")
    for token in (7, 25):
        ref, got = (
            ref_vm.run(weights, step_inputs(0, [token])),
            kernel_vm.run(weights, step_inputs(0, [token])),
        )
        assert compare_outputs(got, ref) == []
    kernel_vm.reset()
    ref_vm.reset()
    assert (
        compare_outputs(kernel_vm.run(weights, step_inputs(0, [3])), ref_vm.run(weights, step_inputs(0, [3])))
        == []
    )


@settings(max_examples=15)
@given(valid_programs(max_tasks=16))
def test_hypothesis_valid_programs(program: MegakernelProgram) -> None:
    weights, inputs = operands(program)
    _same(program, weights, inputs)
