"""The ``explain``, ``certify``, ``check-cert`` and ``prove-rules`` commands: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from amkspec.cli import main
from amkspec.ir import dump
from amkspec.programs.gallery import EXAMPLES
from tests.conftest import FIXTURES

TOY1 = str(FIXTURES / "toy1L__default.json")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _example(tmp_path: Path, name: str) -> str:
    path = tmp_path / "prog.json"
    dump(EXAMPLES[name](), path)
    return str(path)


def test_explain_accepted() -> None:
    code, out, _ = run("explain", TOY1)
    assert code == 0 and "ACCEPTED" in out and "[proved]" in out


def test_explain_rejected_text_json_dot(tmp_path: Path) -> None:
    path = _example(tmp_path, "partial-join read race")
    code, out, _ = run("explain", path)
    assert code == 1 and "[witnessed] R301" in out and "start" in out
    code, out, _ = run("explain", "--json", path)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "rejected"
    assert data["findings"][0]["witness"]["events"][0]["event"] == "start"
    code, out, _ = run("explain", "--dot", path)
    assert code == 1 and out.startswith("digraph")


def test_explain_unusable_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run("explain", str(bad))
    assert code == 2 and err.count("\n") == 1
    code, _, _ = run("explain", str(tmp_path / "missing.json"))
    assert code == 2


def test_certify_and_check(tmp_path: Path) -> None:
    cert = tmp_path / "cert.json"
    code, _, _ = run("certify", TOY1, "-o", str(cert))
    assert code == 0 and cert.exists()
    assert run("check-cert", TOY1, str(cert))[0] == 0
    data = json.loads(cert.read_text())
    data["order"].reverse()
    cert.write_text(json.dumps(data))
    code, _, err = run("check-cert", TOY1, str(cert))
    assert code == 1 and "REFUSED" in err
    cert.write_text("[")
    assert run("check-cert", TOY1, str(cert))[0] == 2


def test_certify_refuses_rejected_programs(tmp_path: Path) -> None:
    path = _example(tmp_path, "cycle")
    code, _, err = run("certify", path, "-o", str(tmp_path / "c.json"))
    assert code == 1 and "REJECTED" in err


def test_prove_rules() -> None:
    code, out, _ = run("prove-rules", "--max-tasks", "2")
    assert code == 0 and out.count("PROVED") == 7
    code, out, _ = run(
        "prove-rules",
        "--max-tasks",
        "3",
        "--rules",
        "original",
        "--theorem",
        "sm-queue-deadlock-freedom",
        "--json",
    )
    assert code == 1 and json.loads(out)[0]["result"] == "COUNTEREXAMPLE"
    assert run("prove-rules", "--theorem", "nonsense")[0] == 2
