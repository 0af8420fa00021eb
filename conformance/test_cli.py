"""``amkspec conformance`` (spec §9.4): exit status, reports and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amkspec", "conformance", *args], capture_output=True, text=True, timeout=300
    )


def test_a_conforming_selection_exits_0_and_writes_both_reports(tmp_path: Path) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    done = _cli("-k", "structure/S10", "--report", str(report), "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CONFORMS" in done.stdout and "§3 Validation" in done.stdout
    doc = json.loads(report.read_text())
    assert doc["passed"] is True and doc["totals"]["failed"] == 0 and doc["totals"]["cases"] > 0
    assert doc["rules"]["VAL-STRUCT-1"]["status"] == "passed"
    suites = ET.parse(junit).getroot()
    assert int(suites.get("tests", "0")) == doc["totals"]["cases"]


def test_accept_everything_exits_1_naming_the_missed_rules() -> None:
    done = _cli("--impl", f"{sys.executable} -m conformance.broken accept-everything", "-k", "races/R30")
    assert done.returncode == 1
    assert "VAL-RACE-1 (MUST)" in done.stdout and "DOES NOT CONFORM" in done.stdout


def test_a_missing_cases_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _cli("--cases", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no such cases folder" in done.stderr


def test_an_implementation_that_cannot_start_fails_every_case() -> None:
    done = _cli("--impl", "/nonexistent/impl", "-k", "format/roundtrip")
    assert done.returncode == 1
    assert "cases: 0 passed, 2 failed" in done.stdout


def test_rules_the_protocol_cannot_drive_are_reported_outside_the_kit(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = _cli("-k", "structure/S101", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    rules = json.loads(report.read_text())["rules"]
    assert rules["EXEC-COOP-1"]["status"] == "outside the kit"  # verified by amkspec's GPU test
    assert rules["VAL-RACE-1"]["status"] == "untested"  # a kit rule whose cases were not selected
    assert "outside" in done.stdout.splitlines()[3]
