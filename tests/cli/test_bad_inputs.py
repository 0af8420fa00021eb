"""Unusable side files (certificates, traces, programs) give one error line and exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from amkspec.cli import main
from tests.conftest import EXAMPLES

PROGRAM = str(EXAMPLES / "decoder_layer.json")
NOT_UTF8 = b"\xff\xfe\xfa{"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error: "), result.stderr
    return lines[0]


def test_a_certificate_that_is_not_text_is_exit_2(tmp_path: Path) -> None:
    cert = tmp_path / "cert.json"
    cert.write_bytes(NOT_UTF8)
    assert f"{cert}: not JSON" in _one_error_line(run("check-cert", PROGRAM, str(cert)))


def test_a_trace_whose_findings_are_not_a_list_is_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"findings": 5}))
    assert "'findings' must be a list" in _one_error_line(run("replay", PROGRAM, str(trace)))


def test_every_command_names_the_unloadable_program(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    lines = {
        _one_error_line(run(*args))
        for args in (
            ("validate", str(bad)),
            ("info", str(bad)),
            ("run", str(bad), "--weights", str(bad), "--inputs", str(bad)),
        )
    }
    assert len(lines) == 1, lines
    assert lines.pop().startswith(f"amkspec: error: {bad}: not JSON")


def test_an_unwritable_safetensors_output_is_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "w.safetensors"
    assert f"{out}: cannot write" in _one_error_line(run("weights", "toy", "-o", str(out)))
