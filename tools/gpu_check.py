"""The first command to run on a GPU machine (spec §8.7): ``python3 tools/gpu_check.py [--out R.json]``.

In about six minutes, on GPU 0, it checks and reports in one JSON file:

1. ``device``: the device and the kernel at two block sizes (256 and 1024 threads): registers,
   blocks per SM, co-resident blocks (the cubins are built first, in parallel);
2. ``gpu_tests``: every ``gpu``-marked test under ``AMK_REQUIRE_GPU=1`` (a skip is a failure);
3. ``race_stress``: each program of a set (the bundled examples, toy-2L in F32 and BF16, split-KV
   attention) launched 300 times at both block sizes: every launch bit-identical to the first,
   the first within tolerance of the ReferenceVM;
4. ``faults``: a forced deadlock ends in TIMEOUT (watchdog), a deadlock past the host deadline
   ends in TIMEOUT (host abort), an opcode fault is a FAULT, a device fault (an illegal address)
   is a FAULT whose context is recovered — each followed by a correct launch in the same process;
5. ``benchmark``: ``benchmarks/cuda_vm.py`` on the GPU (positions 0 and 255 against the floor).

Exit status: 0 every check passed; 1 a check failed (the report says which); 2 nothing could be
checked: no GPU here (one line, ``no GPU: <reason>``), or a dependency is missing (one line).

A bare GPU machine with only torch, nvcc and cuda-bindings and no network: on a machine with the
network, ``pip download -d wheels attrs cattrs orjson click safetensors pytest hypothesis``
(``--python-version`` / ``--platform`` to match the GPU machine, ``--only-binary=:all:``), ship the
``wheels`` folder with the checkout, and run ``python3 tools/gpu_check.py --wheels wheels``: what
is missing is installed from it with ``pip install --no-index --find-links wheels``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
NEEDED = {  # module: the distribution that provides it
    "attrs": "attrs", "cattrs": "cattrs", "orjson": "orjson", "click": "click", "numpy": "numpy",
    "torch": "torch", "safetensors": "safetensors", "pytest": "pytest", "hypothesis": "hypothesis",
}
SIZES = (256, 1024)
STRESS_RUNS = 300


def missing_modules() -> list[str]:
    return [m for m in NEEDED if importlib.util.find_spec(m) is None]


def ensure_dependencies(wheels: Path | None) -> str | None:
    """Install what is missing from ``wheels`` (no network); why it cannot run, or None."""
    missing = missing_modules()
    if missing and wheels is not None and wheels.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
             *(NEEDED[m] for m in missing)],
            check=False,
        )
        importlib.invalidate_caches()
        missing = missing_modules()
    if missing:
        return f"missing {', '.join(missing)} (ship wheels and pass --wheels DIR; see the module doc)"
    return None


def timed(report: dict[str, Any], name: str, check: Callable[[], dict[str, Any]]) -> None:
    """Run one check into ``report[name]``: its result, ``ok``, and its seconds."""
    start = time.perf_counter()
    try:
        result = check()
    except Exception as exc:  # noqa: BLE001 - a check that raises has failed; the report says how
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    result["seconds"] = round(time.perf_counter() - start, 2)
    report[name] = result
    print(f"{name}: {'ok' if result.get('ok') else 'FAILED'} ({result['seconds']} s)", flush=True)


def device_facts() -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    from vm_cuda.cuda import CudaRuntime

    with ThreadPoolExecutor(len(SIZES)) as pool:  # nvcc runs in subprocesses: the builds overlap
        runtimes = list(pool.map(CudaRuntime, SIZES))
    facts = {str(r.threads_per_block): r.facts() for r in runtimes}
    for r in runtimes:
        r.close()
    return {"ok": all(f["blocks_per_sm"] >= 1 for f in facts.values()), "by_block_size": facts}


def gpu_tests() -> dict[str, Any]:
    env = {**os.environ, "AMK_REQUIRE_GPU": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )
    lines = proc.stdout.strip().splitlines()
    return {"ok": proc.returncode == 0, "summary": lines[-1] if lines else proc.stderr[-500:],
            "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))]}


def stress_programs() -> dict[str, tuple[Any, dict[str, Any], dict[str, Any]]]:
    """Name → (program, weights, inputs) of the race stress."""
    from amkspec import load
    from amkspec.ir import DType
    from amkspec.lower import lower, resolve_model
    from amkspec.lower.decode import step_inputs
    from amkspec.models import make_weights
    from amkspec.vm.operands import operands

    out: dict[str, tuple[Any, dict[str, Any], dict[str, Any]]] = {}
    for name in ("spec_example.json", "decoder_layer.json"):
        program = load(ROOT / "examples" / name)
        out[name] = (program, *operands(program))
    m = resolve_model("toy-2L")
    weights = make_weights(m)
    for dtype in (DType.F32, DType.BF16):
        out[f"toy-2L {dtype.name} pos 7"] = (lower(m, "h100", None, pos=7, dtype=dtype), weights,
                                             step_inputs(7, [5]))
    split = {"tiling": {"attention": {"n_partitions": 4}}}
    out["toy-2L split-KV pos 40"] = (lower(m, "h100", split, pos=40), weights, step_inputs(40, [9]))
    return out


def race_stress() -> dict[str, Any]:
    import torch

    from amkspec.vm import ReferenceVM
    from vm_cuda import MegakernelVM
    from vm_cuda.compare import compare_outputs

    def raw(out: dict[str, torch.Tensor]) -> dict[str, bytes]:
        return {k: v.contiguous().view(torch.uint8).numpy().tobytes() for k, v in out.items()}

    results: dict[str, Any] = {}
    for name, (program, weights, inputs) in stress_programs().items():
        want = ReferenceVM(program).run(weights, inputs)
        for threads in SIZES:
            vm = MegakernelVM(program, "cuda", threads_per_block=threads)
            first = vm.run(weights, inputs)
            diffs = compare_outputs(first, want)
            reference = raw(first)
            differing = 0
            for _ in range(STRESS_RUNS - 1):
                vm.reset()
                differing += raw(vm.run(weights, inputs)) != reference
            results[f"{name} @ {threads}"] = {
                "ok": not diffs and differing == 0, "runs": STRESS_RUNS, "runs_differing": differing,
                "reference_diffs": [f"{d.name}: {d.reason}" for d in diffs],
            }
    return {"ok": all(r["ok"] for r in results.values()), "programs": results}


def _chain(threshold: int | None = None) -> Any:
    """x → COPY → y → COPY → z; ``threshold`` 2 makes the second wait forever (a forced deadlock)."""
    from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder, Wait

    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    first = b.add_task(InstructionKind.COPY, [x], [y])
    wait = b.after(first)
    b.add_task(InstructionKind.COPY, [y], [z], waits=[Wait(wait.counter, threshold or wait.threshold)])
    return b.build()


def faults() -> dict[str, Any]:
    import numpy as np
    import torch

    from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder
    from vm_cuda import KernelFault, KernelTimeout, MegakernelVM

    x = {"x": torch.arange(4, dtype=torch.float32).reshape(1, 4)}

    def still_works() -> bool:
        return bool(torch.equal(MegakernelVM(_chain(), "cuda").run({}, x)["z"], x["x"]))

    def expect(kind: type[Exception], make: Callable[[], Any], within_s: float) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            make()
        except kind as exc:
            took = time.perf_counter() - start
            return {"ok": took <= within_s and still_works(), "seconds": round(took, 3), "detail": str(exc)}
        return {"ok": False, "detail": f"no {kind.__name__}"}

    checks: dict[str, Any] = {}
    checks["watchdog"] = expect(KernelTimeout, lambda: MegakernelVM(
        _chain(2), "cuda", timeout_s=0.5, _unsafe_skip_validation=True).run({}, x), 2.0)
    checks["host_deadline"] = expect(KernelTimeout, lambda: MegakernelVM(
        _chain(2), "cuda", timeout_s=60.0, deadline_s=0.5, _unsafe_skip_validation=True).run({}, x), 3.0)
    b = ProgramBuilder()
    ids = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,))
    table = b.new_buffer("table", BufferKind.WEIGHT, DType.F32, (3, 4))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.EMBED, [ids, table], [out], params={"hidden": 4})
    embed = b.build()
    checks["opcode_fault"] = expect(KernelFault, lambda: MegakernelVM(embed, "cuda").run(
        {"table": torch.ones(3, 4)}, {"ids": torch.tensor([7], dtype=torch.int32)}), 2.0)

    def illegal_address() -> None:
        vm = MegakernelVM(_chain(), "cuda")
        vm.run({}, x)  # the image is now resident; point buffer 0 at unmapped memory
        header = vm.resident.header
        bad = np.array([0xDEAD_0000_0000], dtype="<u8").view(np.uint8)
        vm.runtime.write(int(header["buffers_off"]), bad)  # type: ignore[index]
        try:
            vm.run({}, x)
        finally:
            assert torch.equal(vm.run({}, x)["z"], x["x"]), "the same VM works after the recovery"

    checks["device_fault"] = expect(KernelFault, illegal_address, 10.0)
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}


def benchmark(out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cuda_vm.py"), "--models", "", "--repeat", "20",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )
    result: dict[str, Any] = {"ok": proc.returncode == 0, "stdout": proc.stdout.strip().splitlines()}
    if out.exists():
        result["results"] = json.loads(out.read_text())
    if proc.returncode != 0:
        result["stderr"] = proc.stderr[-2000:]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"), help="the JSON report")
    default_wheels = os.environ.get("AMK_WHEELS") or str(ROOT / "wheels")
    parser.add_argument("--wheels", type=Path, default=Path(default_wheels),
                        help="a folder of wheels to install missing dependencies from (no network)")
    args = parser.parse_args(argv)
    problem = ensure_dependencies(args.wheels)
    if problem is not None:
        print(f"gpu_check: {problem}", file=sys.stderr)
        return 2
    from vm_cuda.cuda import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"no GPU: {reason}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    start = time.perf_counter()
    timed(report, "device", device_facts)
    timed(report, "gpu_tests", gpu_tests)
    timed(report, "race_stress", race_stress)
    timed(report, "faults", faults)
    timed(report, "benchmark", lambda: benchmark(args.out.with_suffix(".benchmark.json")))
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["ok"] = all(report[k]["ok"] for k in ("device", "gpu_tests", "race_stress", "faults", "benchmark"))
    args.out.write_text(json.dumps(report, indent=1, default=str))
    print(f"gpu_check: {'all checks passed' if report['ok'] else 'FAILED'}; report {args.out}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
