"""A command whose optional extra is missing exits 2 with one line naming the extra
(docs/guides/robustness.md), never an internal error (exit 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT

_WITHOUT = """
import sys
sys.modules[sys.argv.pop(1)] = None
from amkspec.launch import main
main()
"""


@pytest.mark.parametrize(
    ("module", "extra", "args"),
    [
        ("torch", "vm", ("lower", "toy")),
        ("torch", "vm", ("schema", "--config")),
        ("torch", "vm", ("weights", "toy", "-o", "{d}/w.npz")),
        ("torch", "vm", ("propose", "toy", "--target", "h100")),
        ("z3", "smt", ("explain", "{examples}/spec_example.json")),
        ("z3", "smt", ("prove-rules", "--max-tasks", "2")),
        ("gguf", "models", ("lower", "smollm2-135m")),
        ("ray", "ray", ("check-validator", "--out", "{d}/run", "--tasks", "1", "--executor", "ray")),
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else v,
)
def test_a_missing_extra_is_a_usage_error_naming_it(
    tmp_path: Path, module: str, extra: str, args: tuple[str, ...]
) -> None:
    argv = [a.format(d=tmp_path, examples=EXAMPLES) for a in args]
    done = subprocess.run([sys.executable, "-c", _WITHOUT, module, *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("amkspec: error: "), done.stderr
    assert f"needs the {extra} extra (pip install 'amkspec[{extra}]')" in done.stderr
    assert list(tmp_path.iterdir()) == []
