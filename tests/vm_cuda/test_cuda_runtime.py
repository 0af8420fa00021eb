"""The GPU runtime against a stand-in driver (spec §8.7): attribute queries, the occupancy check,
the cooperative launch, resident state, the host deadline, and device faults with context
recovery — through both marshalling backends (ctypes on a fake ``libcuda`` built against NVIDIA's
``cuda.h``; a ``cuda.bindings``-shaped module), with launches that run the CPU build on the
"device" memory, so results are compared with the ReferenceVM."""

from __future__ import annotations

import ctypes
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from amkspec.ir import MAX_THREADS_PER_BLOCK, WARP, BufferKind, DType
from amkspec.lower import lower, resolve_model
from amkspec.lower.decode import step_inputs
from amkspec.models import make_weights
from amkspec.vm import ReferenceVM
from tests.vm_cuda.fake_driver import FakeBindings, calls, cuda_include, load_fake
from tests.vm_cuda.test_watchdog import X, _chain
from vm_cuda import KernelFault, KernelTimeout, MegakernelVM, cuda, driver
from vm_cuda.compare import compare_outputs
from vm_cuda.cuda import CudaRuntime, CudaUnavailable, check_block_size
from vm_cuda.driver import ATTR, FUNC_ATTR, SIGNATURES, STICKY, BindingsBackend, CtypesBackend, Driver

pytestmark = pytest.mark.skipif(
    cuda_include() is None, reason="NVIDIA's cuda.h (next to nvcc) is not installed"
)
BACKENDS = ("ctypes", "cuda-bindings")


@pytest.fixture(params=BACKENDS)
def fake(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[ctypes.CDLL]:
    """The stand-in driver behind ``request.param``'s backend; cubins are not built (nvcc is slow)."""
    lib = load_fake()
    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"\x7fELF fake cubin")
    monkeypatch.setattr(cuda, "build_cubin", lambda arch, threads: (cubin, f"ptxas {arch} {threads}"))
    factory = (lambda: CtypesBackend(lib)) if request.param == "ctypes" else (
        lambda: BindingsBackend(FakeBindings(lib)))
    monkeypatch.setitem(driver._FACTORIES, request.param, factory)
    monkeypatch.setenv("AMK_CUDA_BACKEND", request.param)
    yield lib
    lib.fake_reset()


# -- the driver's own codes and symbols -----------------------------------------------------------


def test_attribute_and_result_codes_are_the_drivers() -> None:
    from cuda.bindings import driver as nv

    for name, code in ATTR.items():
        assert int(getattr(nv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")) == code, name
    for name, code in FUNC_ATTR.items():
        assert int(getattr(nv.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")) == code, name
    assert ATTR["COOPERATIVE_LAUNCH"] == 95
    names = {int(nv.CUresult(c)): nv.CUresult(c).name for c in STICKY}
    poisoning = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_LAUNCH_FAILED"}
    assert poisoning <= set(names.values())
    assert int(nv.CUresult.CUDA_ERROR_NOT_READY) == driver.NOT_READY
    assert int(nv.CUresult.CUDA_ERROR_LAUNCH_TIMEOUT) == driver.LAUNCH_TIMEOUT


def test_every_ctypes_declaration_is_the_headers_symbol_and_arity() -> None:
    header = (cuda_include() / "cuda.h").read_text()  # type: ignore[operator]
    for name, (symbols, outs, ins) in SIGNATURES.items():
        mapped = re.search(rf"#define {name}\s+(?:__CUDA_API_PTSZ\()?(\w+)", header)
        assert symbols[0] == (mapped.group(1) if mapped else name), name
        proto = re.search(rf"CUresult CUDAAPI {name}\(([^;]*)\);", header)
        assert proto is not None, name
        assert len(proto.group(1).split(",")) == len(outs) + len(ins) or (not outs and not ins), name


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_cuda_bindings_accepts_the_arguments_the_runtime_passes(name: str) -> None:
    """The real module converts every argument before it looks for libcuda: a wrong type is a
    TypeError here; without a driver the call ends in CudaUnavailable."""
    kinds = {ctypes.c_int: 0, ctypes.c_uint: 0, ctypes.c_size_t: 4, ctypes.c_uint64: 4096, ctypes.c_void_p: 0,
             ctypes.c_char_p: b"amk_megakernel", ctypes.c_ubyte: 0}
    args = [kinds[t] for t in SIGNATURES[name][2]]
    for (function, position), enum in driver._ENUM_ARGS.items():
        if function == name:  # a code the enum has
            device = enum == "CUdevice_attribute"
            args[position] = ATTR["COOPERATIVE_LAUNCH"] if device else FUNC_ATTR["NUM_REGS"]
    with pytest.raises(CudaUnavailable):
        BindingsBackend().raw(name, *args)


# -- attribute queries, block sizes, occupancy -------------------------------------------------------


def test_cooperative_launch_is_queried_with_its_attribute(fake: ctypes.CDLL) -> None:
    runtime = CudaRuntime(256)
    assert f"cuDeviceGetAttribute {ATTR['COOPERATIVE_LAUNCH']} 0" in calls(fake)
    assert "cuModuleGetFunction amk_megakernel" in calls(fake)
    facts = runtime.facts()
    assert facts["device"] == "Fake GPU" and facts["arch"] == "sm_90" and facts["max_blocks"] == 2
    fake.fake_reset()
    runtime.close()
    assert calls(fake) == ["cuModuleUnload", "cuDevicePrimaryCtxRelease 0"]
    fake.fake_set_attribute(ATTR["COOPERATIVE_LAUNCH"], 0)
    with pytest.raises(CudaUnavailable, match="does not support cooperative launch"):
        CudaRuntime(256)


def test_every_block_size_validate_accepts_is_launchable_and_no_other() -> None:
    for tpb in range(0, MAX_THREADS_PER_BLOCK + 65):
        ok = WARP <= tpb <= MAX_THREADS_PER_BLOCK and tpb % WARP == 0
        if ok:
            assert check_block_size(tpb) == tpb
        else:
            with pytest.raises(CudaUnavailable, match="O503"):
                check_block_size(tpb)


def test_a_kernel_that_cannot_fit_an_sm_is_a_clear_error(fake: ctypes.CDLL) -> None:
    fake.fake_set_occupancy(0)
    with pytest.raises(CudaUnavailable, match=r"built for 1024 threads per block .* cannot run on Fake GPU"):
        CudaRuntime(1024)
    assert calls(fake)[-1] == "cuDevicePrimaryCtxRelease 0"  # nothing held after the refusal


# -- launches, resident state --------------------------------------------------------------------------


def _h2d_bytes(lines: list[str]) -> int:
    return sum(int(line.split()[1]) for line in lines if line.startswith("cuMemcpyHtoDAsync"))


def test_decode_steps_match_the_reference_vm_with_weights_uploaded_once(fake: ctypes.CDLL) -> None:
    m = resolve_model("toy-2L")
    weights = make_weights(m)
    program = lower(m, None, None, pos=0, dtype=DType.F32)
    vm = MegakernelVM(program, "cuda", threads_per_block=32)
    ref = ReferenceVM(program)
    weight_bytes = sum(b.nbytes for b in program.buffers if b.kind is BufferKind.WEIGHT)
    sent = []
    for token in (7, 3, 11):
        fake.fake_reset()
        got = vm.run(weights, step_inputs(0, [token]), fetch_kv=False)
        assert compare_outputs(got, {k: v for k, v in ref.run(weights, step_inputs(0, [token])).items()
                                     if k in got}) == []
        lines = calls(fake)
        assert "cuLaunchCooperativeKernel 2 1 1 32 1 1" in " ".join(lines)
        sent.append(_h2d_bytes(lines))
    assert sent[0] > weight_bytes and max(sent[1:]) < weight_bytes / 10, sent
    assert all("cuMemAlloc" not in line for line in calls(fake))  # the image stays allocated


# -- the host deadline ----------------------------------------------------------------------------------


def test_the_host_deadline_stops_a_launch_through_the_abort_word(fake: ctypes.CDLL) -> None:
    vm = MegakernelVM(_chain(threshold=2), "cuda", threads_per_block=32, timeout_s=60.0, deadline_s=0.3,
                      _unsafe_skip_validation=True)
    start = time.perf_counter()
    with pytest.raises(KernelTimeout, match=r"host deadline of 0\.3 s") as info:
        vm.run({}, X)
    assert time.perf_counter() - start < 3.0 and info.value.status.kind == "TIMEOUT"
    assert any(line.startswith("cuMemcpyHtoDAsync 4 ") for line in calls(fake))  # the abort word
    assert "cuDevicePrimaryCtxReset 0" not in calls(fake)  # the kernel stopped: nothing to reset
    fine = MegakernelVM(_chain(), "cuda", threads_per_block=32)
    assert torch.equal(fine.run({}, X)["z"], X["x"])


def test_a_launch_that_never_stops_is_a_timeout_and_the_context_is_reset(
    fake: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cuda, "STOP_GRACE_S", 0.2)
    vm = MegakernelVM(_chain(), "cuda", threads_per_block=32, deadline_s=0.2)
    fake.fake_set_hang(1)
    with pytest.raises(KernelTimeout, match=r"did not stop .* GPU context was reset"):
        vm.run({}, X)
    assert "cuDevicePrimaryCtxReset 0" in calls(fake)
    fake.fake_set_hang(0)
    assert torch.equal(vm.run({}, X)["z"], X["x"])  # the same VM writes its image again and runs


# -- device faults ---------------------------------------------------------------------------------------


def test_a_device_fault_is_a_kernel_fault_and_later_runs_work(fake: ctypes.CDLL) -> None:
    m = resolve_model("toy")
    weights = make_weights(m)
    program = lower(m, None, None, pos=0, dtype=DType.F32)
    vm = MegakernelVM(program, "cuda", threads_per_block=64)
    inputs = step_inputs(0, [5])
    first = vm.run(weights, inputs)
    fake.fake_inject(b"cuEventQuery", 700)
    with pytest.raises(KernelFault, match=r"CUDA_ERROR_ILLEGAL_ADDRESS .* context was reset") as info:
        vm.run(weights, inputs)
    assert info.value.status.kind == "FAULT" and vm.last_status == info.value.status
    log = calls(fake)
    reset = log.index("cuDevicePrimaryCtxReset 0")
    assert log[reset + 1 : reset + 3] == ["cuDevicePrimaryCtxRelease 0", "cuDevicePrimaryCtxRetain 0"]
    again = vm.run(weights, inputs)  # KV forgotten (as the ReferenceVM does): the first step again
    assert compare_outputs(again, first) == []


def test_a_driver_error_that_does_not_poison_the_context_is_cuda_unavailable(fake: ctypes.CDLL) -> None:
    vm = MegakernelVM(_chain(), "cuda", threads_per_block=32)
    fake.fake_inject(b"cuLaunchCooperativeKernel", 720)
    too_large = "cuLaunchCooperativeKernel failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
    with pytest.raises(CudaUnavailable, match=too_large):
        vm.run({}, X)
    assert "cuDevicePrimaryCtxReset 0" not in calls(fake)
    assert torch.equal(vm.run({}, X)["z"], X["x"])


def test_a_closed_runtime_refuses_to_launch_and_closes_twice_quietly(fake: ctypes.CDLL) -> None:
    runtime = CudaRuntime(32)
    runtime.close()
    runtime.close()
    with pytest.raises(CudaUnavailable, match="closed"):
        runtime.run(1, 1.0, 0)


def test_the_facade_maps_every_failed_call_to_one_error() -> None:
    class Backend:
        name = "stub"

        def raw(self, name: str, *args: object) -> tuple[int, ...]:
            return (2,)

        def error_name(self, code: int) -> str:
            return "CUDA_ERROR_OUT_OF_MEMORY"

    message = r"cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY \(2\)"
    with pytest.raises(driver.DriverError, match=message) as info:
        Driver(Backend()).call("cuMemAlloc", 10)
    assert not info.value.sticky and isinstance(info.value, CudaUnavailable)
