"""A command whose optional extra is missing exits 2 with one line naming the extra
(docs/guides/robustness.md), never an internal error (exit 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None
from amkspec.launch import main
main()
"""


@pytest.mark.parametrize(
    "args",
    [
        ("lower", "toy"),
        ("schema", "--config"),
        ("weights", "toy", "-o", "{d}/w.npz"),
        ("propose", "toy", "--target", "h100"),
    ],
    ids=lambda args: args[0],
)
def test_a_missing_vm_extra_is_a_usage_error_naming_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    argv = [a.format(d=tmp_path) for a in args]
    done = subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("amkspec: error: "), done.stderr
    assert "needs the vm extra (pip install 'amkspec[vm]')" in done.stderr
    assert list(tmp_path.iterdir()) == []
