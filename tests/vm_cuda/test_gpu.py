"""The megakernel on a GPU (spec §8.7): load, cooperative launch at several block sizes, resident
state, numeric diff, watchdog and host deadline.

Every test here skips with the reason :func:`vm_cuda.cuda.unavailable_reason` gives (no driver
backend, no GPU) and runs for real wherever a GPU is present; under ``AMK_REQUIRE_GPU=1`` a skip
is a failure (tests/conftest.py).
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
from amkspec.vm.operands import operands
from tests.conftest import EXAMPLES
from tests.vm_cuda.test_watchdog import X, _chain, _cycle
from vm_cuda import KernelTimeout, MegakernelVM
from vm_cuda.compare import compare_outputs
from vm_cuda.cuda import CudaRuntime, unavailable_reason

REASON = unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no GPU path: {REASON}")]


@pytest.mark.parametrize("threads", [32, 256, 1024])
def test_the_cubin_loads_and_all_blocks_fit_co_resident(threads: int) -> None:
    runtime = CudaRuntime(threads)
    facts = runtime.facts()
    assert facts["blocks_per_sm"] >= 1 and runtime.max_blocks >= runtime.sm_count
    assert facts["kernel_registers"] * threads <= facts["registers_per_sm"]
    runtime.close()


@pytest.mark.parametrize("threads", [64, 1024])
@pytest.mark.parametrize("name", ["spec_example.json", "decoder_layer.json"])
def test_bundled_examples_match_the_reference_vm(name: str, threads: int) -> None:
    program = load(EXAMPLES / name)
    weights, inputs = operands(program)
    got = MegakernelVM(program, "cuda", threads_per_block=threads).run(weights, inputs)
    assert compare_outputs(got, ReferenceVM(program).run(weights, inputs)) == []


@pytest.mark.parametrize("dtype", [DType.F32, DType.BF16])
def test_toy_2l_decode_steps_match_the_reference_vm(dtype: DType) -> None:
    m = resolve_model("toy-2L")
    weights = make_weights(m)
    kv_ref = kv_gpu = None
    token = 7
    for pos in range(3):  # a program per position: the caches travel through the host
        program = lower(m, None, None, pos=pos, dtype=dtype)
        ref = ReferenceVM(program).run(weights, step_inputs(pos, [token]), kv_ref)
        got = MegakernelVM(program, "cuda").run(weights, step_inputs(pos, [token]), kv_gpu)
        assert compare_outputs(got, ref) == []
        kv_ref = {b.name: ref[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}
        kv_gpu = {b.name: got[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}
        token = int(ref["logits"].float().argmax())


def test_caches_stay_on_the_device_across_launches() -> None:
    m = resolve_model("toy-2L")
    weights = make_weights(m)
    program = lower(m, None, None, pos=0, dtype=DType.F32)
    ref, vm = ReferenceVM(program), MegakernelVM(program, "cuda")
    for token in (7, 3, 9):  # the same program again: the caches carry over on both VMs
        want = ref.run(weights, step_inputs(0, [token]))
        got = vm.run(weights, step_inputs(0, [token]), fetch_kv=False)
        assert compare_outputs(got, {k: v for k, v in want.items() if k in got}) == []
    assert compare_outputs(vm.run(weights, step_inputs(0, [1])), ref.run(weights, step_inputs(0, [1]))) == []


@pytest.mark.parametrize("make", [lambda: _chain(threshold=2), _cycle], ids=["unmet-threshold", "cycle"])
def test_a_forced_deadlock_times_out_within_two_seconds(make: Callable[[], MegakernelProgram]) -> None:
    vm = MegakernelVM(make(), "cuda", timeout_s=0.5, _unsafe_skip_validation=True)
    start = time.perf_counter()
    with pytest.raises(KernelTimeout):
        vm.run({}, X)
    assert time.perf_counter() - start <= 2.0
    assert torch.equal(MegakernelVM(_chain(), "cuda").run({}, X)["z"], X["x"])


def test_the_host_deadline_stops_a_launch() -> None:
    vm = MegakernelVM(
        _chain(threshold=2), "cuda", timeout_s=60.0, deadline_s=0.5, _unsafe_skip_validation=True
    )
    start = time.perf_counter()
    with pytest.raises(KernelTimeout, match="host deadline"):
        vm.run({}, X)
    assert time.perf_counter() - start <= 3.0
    assert torch.equal(MegakernelVM(_chain(), "cuda").run({}, X)["z"], X["x"])
