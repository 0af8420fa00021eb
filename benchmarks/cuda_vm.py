"""Benchmark of the megakernel (spec §8): time per decode step, CPU build vs ReferenceVM, and on a GPU.

Run: ``cd /work/main && python3 benchmarks/cuda_vm.py [--repeat N] [--models toy,toy-2L] [--gpu-model M]``.

CPU part, per model (F32, decode step at position 0, the VM built once): the median seconds of
``ReferenceVM.run`` and of ``MegakernelVM(backend="cpu").run`` (bind + pack + launch of the CPU build,
all blocks as threads), and their ratio; the kernel's outputs are checked against the ReferenceVM first.

GPU part (only where :func:`vm_cuda.cuda.unavailable_reason` is None): on ``--gpu-model`` (default
``small``, BF16, whose weights exceed any L2), the median kernel time per step (CUDA events around
the cooperative launch, copies excluded) against the HBM floor = the program's weight bytes / the
bandwidth of ``--target`` (default h100's measured figure), and the ratio kernel / floor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.ir import TARGETS, DType
from amkspec.lower import lower, resolve_model
from amkspec.lower.decode import step_inputs
from amkspec.models import make_weights
from amkspec.vm import ReferenceVM
from vm_cuda import MegakernelVM
from vm_cuda.compare import compare_outputs


def cpu_part(models: list[str], repeat: int) -> None:
    print(f"{'model':8} {'tasks':>5} {'ReferenceVM ms':>15} {'CPU build ms':>13} {'ratio':>6}")
    for name in models:
        m = resolve_model(name)
        weights = make_weights(m)
        program = lower(m, None, None, pos=0, dtype=DType.F32)
        inputs = step_inputs(0, [7])
        ref_vm, kernel = ReferenceVM(program), MegakernelVM(program, "cpu")
        diffs = compare_outputs(kernel.run(weights, inputs), ref_vm.run(weights, inputs))
        if diffs:
            raise SystemExit(f"{name}: the CPU build disagrees with the ReferenceVM: {diffs}")
        ref_s = median_wall(lambda: ref_vm.run(weights, inputs), repeat, warm_up=True)  # noqa: B023
        ker_s = median_wall(lambda: kernel.run(weights, inputs), repeat, warm_up=True)  # noqa: B023
        print(
            f"{name:8} {len(program.tasks):5d} {ref_s * 1e3:15.2f} {ker_s * 1e3:13.2f} {ker_s / ref_s:6.2f}"
        )


def gpu_part(model: str, target: str, repeat: int) -> None:
    from vm_cuda.cuda import CudaRuntime, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"GPU part skipped: {reason}")
        return
    m = resolve_model(model)
    weights = make_weights(m)
    program = lower(m, None, None, pos=0, dtype=m.dtype)
    vm = MegakernelVM(program, "cuda")
    runtime = vm.runtime
    assert isinstance(runtime, CudaRuntime)
    inputs = step_inputs(0, [7])
    diffs = compare_outputs(vm.run(weights, inputs), ReferenceVM(program).run(weights, inputs))
    kernel_s = []
    for _ in range(repeat):
        vm.run(weights, inputs)
        kernel_s.append(runtime.last_kernel_s)
    gpu = TARGETS[target]
    bandwidth = (gpu.measured_bw_gbs or gpu.hbm_bandwidth_gbs) * 1e9
    floor = program.total_weight_bytes() / bandwidth
    med = statistics.median(kernel_s)
    print(
        f"GPU {runtime.device.name()} ({runtime.arch}), {model} {m.dtype.name}: {len(program.tasks)} tasks, "
        f"{program.total_weight_bytes() / 1e6:.1f} MB of weights; kernel median {med * 1e3:.3f} ms per step; "
        f"HBM floor at {bandwidth / 1e9:.0f} GB/s ({target}) {floor * 1e3:.3f} ms; ratio {med / floor:.2f}; "
        f"outputs {'match' if not diffs else f'DIFFER {diffs}'} the ReferenceVM"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--models", default="toy,toy-2L")
    parser.add_argument("--gpu-model", default="small")
    parser.add_argument("--target", default="h100", choices=sorted(TARGETS))
    args = parser.parse_args()
    cpu_part(args.models.split(","), args.repeat)
    gpu_part(args.gpu_model, args.target, args.repeat)


if __name__ == "__main__":
    main()
