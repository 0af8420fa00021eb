"""The megakernel on a GPU (spec §8.7): PyCUDA load, cooperative launch, numeric diff, watchdog.

Every test here skips with the reason :func:`vm_cuda.cuda.unavailable_reason` gives (no pycuda,
no driver, no GPU) and runs for real wherever a GPU is present.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import torch

from amkspec import load
from amkspec.ir import BufferKind, DType, MegakernelProgram
from amkspec.lower import lower, resolve_model
from amkspec.lower.decode import step_inputs
from amkspec.models import make_weights
from amkspec.vm import ReferenceVM
from tests.conftest import EXAMPLES
from tests.vm_cuda.operands import operands
from tests.vm_cuda.test_watchdog import X, _chain, _cycle
from vm_cuda import KernelTimeout, MegakernelVM
from vm_cuda.compare import compare_outputs
from vm_cuda.cuda import CudaRuntime, unavailable_reason

REASON = unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no GPU path: {REASON}")]


def test_the_cubin_loads_and_all_blocks_fit_co_resident() -> None:
    runtime = CudaRuntime()
    assert runtime._function.value is not None
    assert runtime.max_blocks >= runtime.sm_count


@pytest.mark.parametrize("name", ["spec_example.json", "decoder_layer.json"])
def test_bundled_examples_match_the_reference_vm(name: str) -> None:
    program = load(EXAMPLES / name)
    weights, inputs = operands(program)
    got = MegakernelVM(program, "cuda").run(weights, inputs)
    assert compare_outputs(got, ReferenceVM(program).run(weights, inputs)) == []


@pytest.mark.parametrize("dtype", [DType.F32, DType.BF16])
def test_toy_2l_decode_steps_match_the_reference_vm(dtype: DType) -> None:
    m = resolve_model("toy-2L")
    weights = make_weights(m)
    kv_ref = kv_gpu = None
    token = 7
    for pos in range(3):
        program = lower(m, None, None, pos=pos, dtype=dtype)
        ref = ReferenceVM(program).run(weights, step_inputs(pos, [token]), kv_ref)
        got = MegakernelVM(program, "cuda").run(weights, step_inputs(pos, [token]), kv_gpu)
        assert compare_outputs(got, ref) == []
        kv_ref = {b.name: ref[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}
        kv_gpu = {b.name: got[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}
        token = int(ref["logits"].float().argmax())


@pytest.mark.parametrize("make", [lambda: _chain(threshold=2), _cycle], ids=["unmet-threshold", "cycle"])
def test_a_forced_deadlock_times_out_within_two_seconds(make: Callable[[], MegakernelProgram]) -> None:
    vm = MegakernelVM(make(), "cuda", timeout_s=0.5, _unsafe_skip_validation=True)
    start = time.perf_counter()
    with pytest.raises(KernelTimeout):
        vm.run({}, X)
    assert time.perf_counter() - start <= 2.0
    assert torch.equal(MegakernelVM(_chain(), "cuda").run({}, X)["z"], X["x"])
