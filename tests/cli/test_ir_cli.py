"""``amkspec info``, ``fmt``, ``schema`` and ``demo``: outputs, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amkspec import dumps, load
from amkspec.cli import demo_steps, main
from amkspec.cli.commands import demo as demo_command
from amkspec.ir.schema import program_schema
from tests.conftest import EXAMPLES, FIXTURES

TOY = FIXTURES / "toy1L__default.json"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error: ")
    return lines[0]


def test_info_summarises_the_toy() -> None:
    result = run("info", TOY)
    assert result.exit_code == 0
    out = result.stdout
    for expected in ("tasks:         27", "buffers:       37", "counters:      22", "edges:         33",
                     "weight bytes:  279296", "acyclic:       yes", "target:        rtx5090 (82 SMs)",
                     "GEMV_TILE 13", "valid: yes (0 errors, 0 warnings)"):
        assert expected in out


def test_info_json() -> None:
    result = run("info", FIXTURES / "toy1L__default.pos1.json.gz", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["tasks"], data["edges"], data["weight_bytes"]) == (27, 33, 279296)
    assert data["validation"]["valid"] is True
    assert data["ops"]["GEMV_TILE"] == 13


def test_info_reports_rejection_but_exits_zero() -> None:
    result = run("info", EXAMPLES / "rejected_partial_join.json")
    assert result.exit_code == 0
    assert "valid: no (1 error, 0 warnings)" in result.stdout
    assert "R301" in result.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read"),
        ("not json", "not JSON"),
        ('{"buffers": []}', "missing required field 'counters'"),
        ('{"buffers": [], "counters": [], "tasks": [{"id": "0"}]}', "tasks[0].id: expected an integer"),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "prog.json"
    if content is not None:
        path.write_text(content)
    for command in ("info", "fmt"):
        assert fragment in _one_error_line(run(command, path), 2)


def test_directories_and_unwritable_outputs_are_one_line_errors(tmp_path: Path) -> None:
    assert "Is a directory" in _one_error_line(run("info", tmp_path), 2)
    assert "Is a directory" in _one_error_line(run("fmt", TOY, "-o", tmp_path), 2)
    assert "No such file" in _one_error_line(run("schema", "-o", tmp_path / "no" / "s.json"), 2)
    assert "not a directory" in _one_error_line(run("demo", TOY), 2)


def test_major_version_is_exit_2_and_newer_minor_warns(tmp_path: Path) -> None:
    doc = json.loads(TOY.read_text())
    path = tmp_path / "prog.json"
    path.write_text(json.dumps({**doc, "ir_version": "1.0.0"}))
    assert "ir_version" in _one_error_line(run("info", path), 2)
    path.write_text(json.dumps({**doc, "ir_version": "0.9.0"}))
    result = run("info", path)
    assert result.exit_code == 0
    assert result.stderr.strip().startswith("amkspec: warning: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_fmt_writes_canonical_text(tmp_path: Path) -> None:
    messy = tmp_path / "messy.json"
    doc = json.loads(TOY.read_text())
    doc["tasks"][0] = dict(reversed(list(doc["tasks"][0].items())))
    messy.write_text(json.dumps(doc, separators=(",", ":")))
    result = run("fmt", messy)
    assert result.exit_code == 0
    assert result.stdout == TOY.read_text() + "\n"
    assert run("fmt", "--check", messy).exit_code == 1
    assert "not in canonical form" in run("fmt", "--check", messy).stderr
    out = tmp_path / "clean.json"
    assert run("fmt", messy, "-o", out).exit_code == 0
    assert out.read_text() == dumps(load(TOY)) + "\n"
    assert run("fmt", "--check", out).exit_code == 0


def test_fmt_check_accepts_files_written_by_the_original() -> None:
    assert run("fmt", "--check", TOY).exit_code == 0
    assert run("fmt", "--check", FIXTURES / "toy1L__default.pos2.json.gz").exit_code == 0


def test_schema_command(tmp_path: Path) -> None:
    result = run("schema")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == program_schema()
    out = tmp_path / "schema.json"
    assert run("schema", "-o", out).exit_code == 0
    assert json.loads(out.read_text()) == program_schema()


def test_demo_checks_the_examples_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_command, "DEMO_STEPS", [demo_steps.check_programs])
    examples = list(EXAMPLES.glob("*.json"))
    for f in examples:
        shutil.copy(f, tmp_path / f.name)
    result = run("demo", tmp_path)
    assert result.exit_code == 0, result.output
    assert f"{len(examples)} of {len(examples)} programs behaved as expected" in result.stdout
    shutil.copy(EXAMPLES / "rejected_partial_join.json", tmp_path / "looks_fine.json")
    result = run("demo", tmp_path)
    assert result.exit_code == 1
    assert "UNEXPECTED: expected valid" in result.stdout
    (tmp_path / "broken.json").write_text("{")
    assert "broken.json: cannot be loaded" in run("demo", tmp_path).stdout


def test_demo_without_programs_or_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_command, "DEMO_STEPS", [demo_steps.check_programs])
    assert run("demo", tmp_path).exit_code == 1
    assert "no such directory" in _one_error_line(run("demo", tmp_path / "missing"), 2)


def test_demo_default_directory_is_the_bundled_examples() -> None:
    assert demo_steps.default_examples_dir() == EXAMPLES
