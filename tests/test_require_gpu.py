"""``AMK_REQUIRE_GPU=1`` turns every skipped GPU test into a failure with its reason (tests/conftest.py):
run the GPU tests in a subprocess under the variable; without a GPU path here the run must fail."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REQUIRE_GPU, ROOT
from vm_cuda.cuda import unavailable_reason


def _pytest(require: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, REQUIRE_GPU: "1" if require else "0"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/vm_cuda/test_gpu.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def test_gpu_skips_fail_under_amk_require_gpu() -> None:
    reason = unavailable_reason()
    required = _pytest(require=True)
    if reason is None:  # a GPU machine: the GPU tests run and pass
        assert required.returncode == 0, required.stdout[-3000:]
        return
    assert required.returncode == 1, required.stdout[-3000:]
    assert f"{REQUIRE_GPU}=1 but this GPU test was skipped: no GPU path: {reason}" in required.stdout
    assert " passed" not in required.stdout.splitlines()[-1]
    relaxed = _pytest(require=False)
    assert relaxed.returncode == 0 and "skipped" in relaxed.stdout.splitlines()[-1], relaxed.stdout[-3000:]
