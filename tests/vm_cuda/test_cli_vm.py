"""``amkspec run|decode --vm cpu-kernel|cuda`` (spec §8.5): same answers as the ReferenceVM."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main
from tests.conftest import FIXTURES
from vm_cuda import MegakernelVM
from vm_cuda.cuda import unavailable_reason


def _cli(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_decode_on_the_cpu_kernel_agrees_with_eager_like_the_reference_vm() -> None:
    kernel = _cli("decode", "toy", "--prompt-ids", "7,25", "--steps", "2", "--vm", "cpu-kernel")
    reference = _cli("decode", "toy", "--prompt-ids", "7,25", "--steps", "2")
    assert kernel.exit_code == 0, kernel.output
    last = kernel.output.strip().splitlines()[-1]
    assert "VM and eager agree" in last
    assert last.split(";")[0] == reference.output.strip().splitlines()[-1].split(";")[0]  # same tokens


def test_run_on_the_cpu_kernel_writes_the_reference_outputs(tmp_path: Path) -> None:
    with np.load(FIXTURES / "toy1L__default.inputs.npz") as z:
        np.savez(tmp_path / "in.npz", **{k[4:]: z[k] for k in z.files if k.startswith("s0__")})
    outs = {}
    for vm in ("reference", "cpu-kernel"):
        result = _cli(
            "run",
            FIXTURES / "toy1L__default.json",
            "--weights",
            FIXTURES / "toy-1L.weights.npz",
            "--inputs",
            tmp_path / "in.npz",
            "--vm",
            vm,
            "-o",
            tmp_path / f"{vm}.npz",
        )
        assert result.exit_code == 0, result.output
        assert result.output.startswith("launch 0: argmax [25]")
        with np.load(tmp_path / f"{vm}.npz") as z:
            outs[vm] = {k: z[k] for k in z.files}
    assert outs["reference"].keys() == outs["cpu-kernel"].keys()
    for key, value in outs["reference"].items():
        np.testing.assert_allclose(outs["cpu-kernel"][key], value, atol=1e-4, rtol=1e-4)


@pytest.mark.skipif(unavailable_reason() is None, reason="a GPU is present: --vm cuda runs (see test_gpu.py)")
def test_vm_cuda_without_a_gpu_is_one_clear_error() -> None:
    result = _cli("decode", "toy", "--prompt-ids", "7", "--steps", "1", "--vm", "cuda")
    assert result.exit_code == 2
    assert "--vm cuda:" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(unavailable_reason() is None, reason="a GPU is present: see test_gpu.py")
def test_the_cuda_backend_without_a_gpu_raises_one_clear_error() -> None:
    from amkspec import load
    from tests.conftest import EXAMPLES
    from vm_cuda.cuda import CudaUnavailable

    with pytest.raises(CudaUnavailable, match=re.escape(str(unavailable_reason()))):
        MegakernelVM(load(EXAMPLES / "spec_example.json"), "cuda")
