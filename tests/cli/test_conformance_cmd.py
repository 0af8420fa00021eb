"""``amkspec conformance``: a report never replaces one of the case files it reads (spec §9.4)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main
from tests.conftest import ROOT

CASE = ROOT / "corpus" / "cases" / "deadlock" / "D203_self_wait_ok.json"


def _conformance(cases: Path, option: str, output: Path) -> Result:
    return CliRunner().invoke(main, ["conformance", "--cases", str(cases), "-k", "D203", option, str(output)])


@pytest.mark.parametrize("option", ["--report", "--junit"])
def test_a_report_is_never_written_into_the_cases_folder(tmp_path: Path, option: str) -> None:
    cases = tmp_path / "cases"
    (cases / "deadlock").mkdir(parents=True)
    case = cases / "deadlock" / CASE.name
    shutil.copy(CASE, case)
    outside = tmp_path / "out"
    outside.mkdir()
    os.symlink(case, outside / "link.json")
    os.link(case, outside / "hard.json")
    for target in (case, cases / "new.json", outside / "link.json", outside / "hard.json"):
        result = _conformance(cases, option, target)
        assert result.exit_code == 2, (target, result.output)
        assert result.stderr.startswith(f"amkspec: error: {target}: refusing to ") and result.stdout == ""
        assert case.read_bytes() == CASE.read_bytes()
    assert sorted(p.name for p in cases.rglob("*")) == ["D203_self_wait_ok.json", "deadlock"]
    fine = outside / "report.out"
    result = _conformance(cases, option, fine)
    assert result.exit_code == 0 and fine.stat().st_size > 0, result.output
