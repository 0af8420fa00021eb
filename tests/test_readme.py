"""The README's commands: command 1 installs what the command table needs, command 2 is what CI
runs, and the "Try it" block runs as written, writing only under ``$OUT`` (issue 27)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from amkspec.cli.base import EXTRA_OF_MODULE
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def _blocks(lang: str = "") -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, flags=re.M | re.S)


def test_command_1_installs_every_extra_the_command_table_needs() -> None:
    (extras,) = re.findall(r"-e '\.\[([a-z,]+)\]' && amkspec demo", _blocks()[0])
    needed = set(EXTRA_OF_MODULE.values()) - {"cuda", "ray"}  # a GPU's, a cluster's: the table adds them
    assert needed <= set(extras.split(",")), needed - set(extras.split(","))
    assert "pip install '.[cuda]'" in README and "pip install '.[ray]'" in README


def test_command_2_is_what_ci_runs_and_repeats_the_numerics_on_the_default_cpu_path() -> None:
    command = _blocks()[1].strip()
    steps = command.split(" && ")
    assert steps[0] == "pip install torch==2.13.0 -e '.[test]'"
    assert "ATEN_CPU_CAPABILITY=default python3 -m pytest -q -m 'numerics and not slow'" in steps
    assert steps.index("python3 -m pytest -q") < len(steps) - 2 and steps[-1].startswith("python3 -m sphinx")
    ci = (ROOT / ".ci" / "run").read_text()
    assert " && ".join(steps[1:]) in ci and "install -q torch==2.13.0 -e '.[test]'" in ci


def _snapshot() -> set[str]:
    """The files directly in the clone and in examples/ (where an example that ignores --out lands)."""
    return {p.name for p in ROOT.iterdir()} | {f"examples/{p.name}" for p in (ROOT / "examples").iterdir()}


def test_the_try_it_block_runs_and_writes_only_under_out(tmp_path: Path) -> None:
    """Line by line, as a reader runs it: each exits 0, but ``explain`` of a rejected example, 1."""
    (block,) = [b for b in _blocks("bash") if b.startswith("OUT=$(mktemp -d)\n")]
    out = tmp_path / "out"
    out.mkdir()
    before = _snapshot()
    stdout = ""
    for line in block.splitlines()[1:]:
        done = subprocess.run(["bash", "-c", line], cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "OUT": str(out)})
        assert done.returncode == (1 if "rejected_" in line else 0), (line, done.stderr[-2000:])
        stdout += done.stdout
    assert _snapshot() == before
    for name in ("toy.json", "toy.npz", "inputs.json", "out.npz", "report.html", "race.png", "cfg.json",
                 "verdict.json", "search.png", "search/results.tsv"):
        assert (out / name).is_file(), name
    assert "launch 2: argmax" in stdout
