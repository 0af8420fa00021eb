"""``check-cert`` on untrusted certificate files: exit 2 with one line for unusable input, exit 1
for a certificate that proves nothing, never a traceback (issue 9, bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from amkspec.cli import main
from tests.conftest import FIXTURES

TOY1 = str(FIXTURES / "toy1L__default.json")


def _check(tmp_path: Path, text: str) -> tuple[int, str]:
    cert = tmp_path / "cert.json"
    cert.write_text(text)
    result = CliRunner().invoke(main, ["check-cert", TOY1, str(cert)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stderr


def _valid(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    out = tmp_path / "good.json"
    result = CliRunner().invoke(main, ["certify", TOY1, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000 + "]" * 200_000,
        '{"order": [' + "9" * 5000 + "]}",
        "[1, 2",
        '"a string"',
        "{}",
        '{"format": "amkspec-certificate", "version": 2}',
    ],
    ids=["deep", "huge-int", "truncated", "string", "empty", "missing-keys"],
)
def test_unusable_certificates_exit_2(tmp_path: Path, text: str) -> None:
    code, err = _check(tmp_path, text)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("key", "value"),
    [("order", "abc"), ("paths", [["x", 1]]), ("pages", [{"page": 1.5}]), ("version", True)],
)
def test_wrong_types_exit_2(tmp_path: Path, key: str, value: object) -> None:
    cert = _valid(tmp_path)
    cert[key] = value
    code, err = _check(tmp_path, json.dumps(cert))
    assert code == 2 and "not a certificate" in err


def test_a_refused_certificate_exits_1(tmp_path: Path) -> None:
    cert = _valid(tmp_path)
    assert _check(tmp_path, json.dumps(cert))[0] == 0
    cert["paths"] = cert["paths"][1:]
    code, err = _check(tmp_path, json.dumps(cert))
    assert code == 1 and "REFUSED" in err
