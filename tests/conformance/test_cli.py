"""``amkspec conformance`` (spec §9.4): exit status by level, reports, and one-line errors (exit 2)
for an empty selection or an implementation that does not start — in the CLI and the pytest form."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amkspec", "conformance", *args], capture_output=True, text=True, timeout=300
    )


def test_a_conforming_selection_exits_0_and_writes_both_reports(tmp_path: Path) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    done = _cli("-k", "structure/S10", "--report", str(report), "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict at level core: CONFORMS" in done.stdout and "§3 Validation" in done.stdout
    doc = json.loads(report.read_text())
    assert doc["passed"] is True and doc["totals"]["failed"] == 0 and doc["totals"]["cases"] > 0
    assert doc["level"] == "core" and doc["levels"]["strict"]["passed"] is True
    assert doc["rules"]["VAL-STRUCT-1"]["status"] == {"strict": "passed"}  # a strict rule
    assert doc["rules"]["VAL-STRUCT-4"]["status"] == {"core": "passed", "strict": "passed"}
    suites = ET.parse(junit).getroot()
    assert int(suites.get("tests", "0")) == doc["totals"]["cases"]


def test_accept_everything_exits_1_naming_the_missed_rules() -> None:
    done = _cli("--impl", f"{sys.executable} -m corpus.broken accept-everything", "-k", "races/R30")
    assert done.returncode == 1
    assert "VAL-RACE-1 (MUST, core)" in done.stdout
    assert "verdict at level core: DOES NOT CONFORM" in done.stdout


def test_the_level_decides_the_exit_status() -> None:
    impl = f"{sys.executable} -m corpus.broken spec-minimal"
    core = _cli("--impl", impl, "-k", "format/", "--level", "core")
    strict = _cli("--impl", impl, "-k", "format/", "--level", "strict")
    assert (core.returncode, strict.returncode) == (0, 1), core.stdout + strict.stdout
    for done in (core, strict):
        assert "core: CONFORMS" in done.stdout and "strict: DOES NOT CONFORM" in done.stdout
    assert "FMT-UNK-2 (MUST, strict)" in core.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--cases", "{tmp}/nowhere"), "no such cases folder"),
        (("--cases", "{tmp}"), "no conformance case under {tmp}: nothing to certify"),
        (("-k", "nothing-matches"), "matches -k 'nothing-matches': nothing to certify"),
        (("--impl", "/no/such/binary"), "the implementation '/no/such/binary' did not start"),
        (("--impl", f"{sys.executable} -c pass"), "did not start: crashed on 'start' (exit status 0)"),
    ],
)
def test_certifying_nothing_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    done = _cli(*(a.format(tmp=tmp_path) for a in args))
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and says.format(tmp=tmp_path) in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("-k", "nothing-matches"), "matches -k 'nothing-matches': nothing to certify"),
        (("--cases", "{tmp}"), "no conformance case under {tmp}: nothing to certify"),
        (("--impl", "/no/such/binary"), "the implementation '/no/such/binary' did not start"),
    ],
)
def test_the_pytest_form_refuses_to_certify_nothing_with_exit_2(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "corpus/",
         *(a.format(tmp=tmp_path) for a in args)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if "amkspec conformance:" in line]
    assert len(errors) == 1 and says.format(tmp=tmp_path) in errors[0], done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_rules_the_protocol_cannot_drive_are_reported_outside_the_kit(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = _cli("-k", "structure/S101", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    rules = json.loads(report.read_text())["rules"]
    assert rules["EXEC-COOP-1"]["status"]["core"] == "outside the kit"  # verified by amkspec's GPU test
    assert rules["VAL-RACE-1"]["status"]["core"] == "untested"  # a kit rule whose cases were not selected
    assert "outside the kit" in done.stdout
