"""Regression tests of issue 27 (a newcomer's first hour): one test per finding, each failed
before its fix. Unusable input gets one error line and exit 2; nothing is written but what the
user named."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main
from tests.conftest import EXAMPLES

ACCEPTED = str(EXAMPLES / "decoder_layer.json")
REJECTED = str(EXAMPLES / "rejected_partial_join.json")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error(result: Result, code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("args", [("explain", REJECTED, "--png"), ("fmt", ACCEPTED, "-o")])
def test_writing_into_a_missing_directory_names_the_destination(tmp_path: Path, args: tuple[str, ...]) -> None:
    target = tmp_path / "missing" / "x.png"
    line = one_error(run(*args, str(target)))
    assert f"{target}: " in line and f"its directory {target.parent} does not exist" in line
    assert ".tmp" not in line


def test_explain_of_an_accepted_program_draws_its_graph_and_still_writes_the_report(tmp_path: Path) -> None:
    png, html = tmp_path / "a.png", tmp_path / "a.html"
    result = run("explain", ACCEPTED, "--png", str(png), "--html", str(html))
    assert result.exit_code == 0, result.stderr
    assert png.read_bytes()[:4] == b"\x89PNG" and html.exists()
    assert f"wrote {png}: program graph (accepted: 5 proofs, no witness to draw)" in result.stdout


def test_the_report_of_an_accepted_program_counts_proofs_not_findings(tmp_path: Path) -> None:
    html = tmp_path / "a.html"
    result = run("explain", ACCEPTED, "--html", str(html))
    assert f"wrote {html}: report of 5 proofs" in result.stdout
    summary = "".join(ET.parse(html).getroot().itertext())
    assert "34 tasks; 5 proofs." in summary and "5 findings" not in summary
    rejected = tmp_path / "r.html"
    run("explain", REJECTED, "--html", str(rejected))
    assert "4 tasks; 1 finding (1 witnessed)." in "".join(ET.parse(rejected).getroot().itertext())


def test_finding_numbers_say_they_start_at_1_with_plurals_right(tmp_path: Path) -> None:
    line = one_error(run("info", REJECTED, "--svg", str(tmp_path / "x.svg"), "--highlight", "0"))
    assert line.endswith("there is no finding 0: findings are numbered from 1 and the program has 1 error")
    line = one_error(run("explain", REJECTED, "--png", str(tmp_path / "x.png"), "--finding", "5"))
    assert line.endswith("there is no finding 5: findings are numbered from 1 and the program has 1 finding")
    line = one_error(run("explain", ACCEPTED, "--png", str(tmp_path / "x.png"), "--finding", "6"))
    assert line.endswith("the program has 5 proofs")
    assert not re.search(r"\b1 (errors|findings)\b", line)
