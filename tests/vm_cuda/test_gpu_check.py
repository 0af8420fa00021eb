"""``tools/gpu_check.py`` (spec §8.7): without a GPU it checks nothing and says so in one line (exit 2);
with a GPU the same command is the GPU machine's first check (run by hand there, ~6 minutes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from vm_cuda.cuda import unavailable_reason


@pytest.mark.skipif(unavailable_reason() is None, reason="a GPU is present: run tools/gpu_check.py itself")
def test_without_a_gpu_it_says_so_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--out", str(report)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("no GPU: ") and str(unavailable_reason()) in proc.stderr
    assert not report.exists()
