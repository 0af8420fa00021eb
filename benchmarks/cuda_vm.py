"""Benchmark of the megakernel (spec §8): a decode step against its HBM floor on a GPU, and the CPU build.

Run: ``python3 benchmarks/cuda_vm.py [--repeat N] [--models toy,toy-2L] [--gpu-model small]
[--target h200] [--positions 0,255] [--json OUT]``.

CPU half, per model (F32, decode step at position 0, the VM built once): the median seconds of
``ReferenceVM.run`` and of ``MegakernelVM(backend="cpu").run`` (its resident image: the weights
written once), and their ratio; the kernel's outputs are checked against the ReferenceVM first.

GPU half (where :func:`vm_cuda.cuda.unavailable_reason` is None; otherwise it says plainly that
there is no GPU): on ``--gpu-model`` (default ``small``, BF16, 623 MB of weights: more than any L2),
lowered for ``--target`` at each of ``--positions`` (split-KV attention: :data:`SPLIT_KV`), the
outputs are compared with the ReferenceVM first (a difference fails the run, exit 1); then, over
``--repeat`` steps with the weights resident and the caches on the device, the median kernel time
(CUDA events around the cooperative launch) and the median end-to-end step time
(``MegakernelVM.run``: bind, stage, launch, read back), each against the floor = the bytes the step
must read (:func:`vm_cuda.floor.read_bytes`: the weights it uses, one embedding row, the KV window)
/ the target's bandwidth (the spec-sheet figure, and the measured one where the target record has
it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.ir import TARGETS, DType
from amkspec.lower import lower, resolve_model
from amkspec.lower.decode import step_inputs
from amkspec.models import make_weights
from amkspec.vm import ReferenceVM
from vm_cuda import MegakernelVM
from vm_cuda.compare import compare_outputs
from vm_cuda.floor import read_bytes

SPLIT_KV = {"tiling": {"attention": {"n_partitions": 8}}}
"""The lowering's split-KV attention (up to 8 shards, one per 16 positions: partials on several blocks,
then ATTENTION_COMBINE), so attention at position 255 does not run on one block."""


class WrongOutputs(SystemExit):
    """The kernel disagreed with the ReferenceVM: the run fails (exit 1)."""


def _check(name: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    diffs = compare_outputs(got, {k: v for k, v in want.items() if k in got})
    if diffs:
        print(f"{name}: the megakernel disagrees with the ReferenceVM: {diffs}", file=sys.stderr)
        raise WrongOutputs(1)


def cpu_half(models: list[str], repeat: int) -> list[dict[str, Any]]:
    print(f"{'model':8} {'tasks':>5} {'ReferenceVM ms':>15} {'CPU build ms':>13} {'ratio':>6}")
    rows = []
    for name in models:
        m = resolve_model(name)
        weights = make_weights(m)
        program = lower(m, None, None, pos=0, dtype=DType.F32)
        inputs = step_inputs(0, [7])
        ref_vm, kernel = ReferenceVM(program), MegakernelVM(program, "cpu")
        _check(name, kernel.run(weights, inputs), ref_vm.run(weights, inputs))
        ref_s = median_wall(lambda: ref_vm.run(weights, inputs), repeat, warm_up=True)  # noqa: B023
        ker_s = median_wall(lambda: kernel.run(weights, inputs, fetch_kv=False), repeat, warm_up=True)  # noqa: B023
        ratio = ker_s / ref_s
        print(f"{name:8} {len(program.tasks):5d} {ref_s * 1e3:15.2f} {ker_s * 1e3:13.2f} {ratio:6.2f}")
        rows.append({"model": name, "tasks": len(program.tasks), "reference_s": ref_s, "cpu_build_s": ker_s})
    return rows


def gpu_step(model: str, target: str, pos: int, repeat: int, threads: int | None) -> dict[str, Any]:
    """One position of the GPU half: checked outputs, then the timings against the floor."""
    m = resolve_model(model)
    weights = make_weights(m)
    program = lower(m, target, SPLIT_KV, pos=pos, dtype=m.dtype)
    inputs = step_inputs(pos, [7])
    vm = MegakernelVM(program, "cuda", threads_per_block=threads)
    _check(f"{model} at position {pos}", vm.run(weights, inputs), ReferenceVM(program).run(weights, inputs))
    kernel_s, step_s = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        vm.run(weights, inputs, fetch_kv=False)
        step_s.append(time.perf_counter() - start)
        kernel_s.append(vm.runtime.last_kernel_s)  # type: ignore[attr-defined]
    gpu = TARGETS[target]
    nbytes = read_bytes(program)
    floor_s = nbytes / (gpu.hbm_bandwidth_gbs * 1e9)
    measured = nbytes / (gpu.measured_bw_gbs * 1e9) if gpu.measured_bw_gbs > 0 else None
    kernel, step = statistics.median(kernel_s), statistics.median(step_s)
    return {
        "model": model, "dtype": m.dtype.name, "position": pos, "tasks": len(program.tasks),
        "device": vm.runtime.facts(),  # type: ignore[attr-defined]
        "read_bytes": nbytes, "weight_bytes": program.total_weight_bytes(),
        "target": target, "bandwidth_gbs": gpu.hbm_bandwidth_gbs, "floor_s": floor_s,
        "floor_measured_bw_s": measured, "kernel_s": kernel, "step_s": step,
        "kernel_over_floor": kernel / floor_s, "step_over_floor": step / floor_s, "outputs": "match",
    }


def gpu_half(
    model: str, target: str, positions: list[int], repeat: int, threads: int | None
) -> dict[str, Any]:
    from vm_cuda.cuda import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"GPU half: no GPU here, nothing measured ({reason})")
        return {"gpu": None, "reason": reason}
    rows = [gpu_step(model, target, pos, repeat, threads) for pos in positions]
    for r in rows:
        d = r["device"]
        print(
            f"GPU {d['device']} ({d['arch']}, {d['backend']}, {d['threads_per_block']} threads/block): "
            f"{model} "
            f"{r['dtype']} at position {r['position']}: reads {r['read_bytes'] / 1e6:.1f} MB "
            f"(of {r['weight_bytes'] / 1e6:.1f} MB of weights); floor {r['floor_s'] * 1e3:.3f} ms at "
            f"{r['bandwidth_gbs']:.0f} GB/s ({target}); kernel median {r['kernel_s'] * 1e3:.3f} ms "
            f"({r['kernel_over_floor']:.2f}× the floor), step median {r['step_s'] * 1e3:.3f} ms "
            f"({r['step_over_floor']:.2f}×); outputs match the ReferenceVM"
        )
    return {"gpu": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--models", default="toy,toy-2L", help="CPU half: comma-separated models ('' skips)")
    parser.add_argument("--gpu-model", default="small")
    parser.add_argument("--target", default="h200", choices=sorted(TARGETS))
    parser.add_argument("--positions", default="0,255")
    parser.add_argument("--threads", type=int, default=None, help="GPU threads per block (default: 256)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    try:
        models = [m for m in args.models.split(",") if m]
        report["cpu"] = cpu_half(models, args.repeat) if models else []
        positions = [int(p) for p in args.positions.split(",")]
        report.update(gpu_half(args.gpu_model, args.target, positions, args.repeat, args.threads))
    except WrongOutputs:
        report["outputs"] = "DIFFER"
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))
        return 1
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
