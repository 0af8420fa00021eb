"""``amkspec validate``: reports grouped by spec section, JSON output, exit codes 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from amkspec.cli import main
from tests.conftest import EXAMPLES, FIXTURES

TOY = str(FIXTURES / "toy1L__default.json")
REJECTED = str(EXAMPLES / "rejected_partial_join.json")


def test_valid_file_exits_0() -> None:
    out = CliRunner().invoke(main, ["validate", TOY])
    assert out.exit_code == 0
    assert out.output.startswith(f"{TOY}: VALID: 0 error(s), 0 warning(s) (27 tasks")


def test_rejected_file_exits_1_with_section_and_code() -> None:
    out = CliRunner().invoke(main, ["validate", TOY, REJECTED])
    assert out.exit_code == 1
    assert "§3.3 race-freedom" in out.output and "R301" in out.output


def test_json_output_has_one_result_per_file() -> None:
    out = CliRunner().invoke(main, ["validate", "--json", TOY, REJECTED])
    assert out.exit_code == 1
    files = json.loads(out.output)["files"]
    assert [f["verdict"] for f in files] == ["accepted", "rejected"]
    assert files[1]["codes"] == ["R301"] and files[1]["diagnostics"][0]["clause"] == "§3.3"


def test_unreadable_file_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = CliRunner().invoke(main, ["validate", TOY, str(bad)])
    assert out.exit_code == 2
    errors = [line for line in out.stderr.splitlines() if line]
    assert len(errors) == 1 and errors[0].startswith(f"amkspec: error: {bad}:")
    assert "Traceback" not in out.output


def test_a_directory_is_that_argument_s_error_and_the_other_files_are_judged(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["validate", TOY, str(tmp_path), REJECTED])
    assert out.exit_code == 2
    assert out.stderr.splitlines() == [f"amkspec: error: {tmp_path}: cannot read the file: Is a directory"]
    assert out.stdout.startswith(f"{TOY}: VALID") and f"{REJECTED}: REJECTED" in out.stdout
    as_json = CliRunner().invoke(main, ["validate", "--json", str(tmp_path), TOY])
    files = json.loads(as_json.stdout)["files"]
    assert as_json.exit_code == 2 and [f.get("verdict") for f in files] == [None, "accepted"]
    assert files[0] == {"file": str(tmp_path), "error": "cannot read the file: Is a directory"}
