"""``amkspec replay``: a witness trace on the ReferenceVM's shadow state (exit codes 0/1/2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.programs.small import scale_chain


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def racy(tmp_path: Path) -> Path:
    path = tmp_path / "racy.json"
    amkspec.dump(scale_chain(scale_waits=False), str(path))
    return path


def _write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_stale_read_exits_1_and_names_the_tasks(racy: Path, tmp_path: Path) -> None:
    events = [{"event": e, "task": t} for e, t in (("start", 0), ("start", 1), ("end", 0), ("end", 1))]
    code, out, _ = _invoke("replay", str(racy), _write(tmp_path, events))
    assert code == 1 and out.strip() == "task 1:triple read buffer 1:y before writer(s) 0:double ended"


def test_an_ordered_trace_from_explain_style_json_exits_0(racy: Path, tmp_path: Path) -> None:
    events = [{"event": e, "task": t} for e, t in (("start", 0), ("end", 0), ("start", 1), ("end", 1))]
    doc = {"verdict": "rejected", "findings": [{"witness": None}, {"witness": {"events": events}}]}
    code, out, _ = _invoke("replay", str(racy), _write(tmp_path, doc), "--json")
    expected = {"order": [0, 1], "stale_reads": [], "conflicts": [], "deadlock": None}
    assert code == 0 and json.loads(out) == expected


@pytest.mark.parametrize("doc", [[{"event": "start", "task": 9}], [{"event": "go"}], {"findings": []}])
def test_an_unusable_trace_exits_2(racy: Path, tmp_path: Path, doc: object) -> None:
    code, _, err = _invoke("replay", str(racy), _write(tmp_path, doc))
    assert code == 2 and err.startswith("amkspec: error:") and len(err.strip().splitlines()) == 1


def test_a_stuck_program_exits_1_with_the_deadlock(tmp_path: Path) -> None:
    program = scale_chain()
    program.tasks[1].waits[0].threshold = 2
    path = tmp_path / "stuck.json"
    amkspec.dump(program, str(path))
    code, out, _ = _invoke("replay", str(path), _write(tmp_path, []))
    assert code == 1 and "deadlock: 1 task(s) can never start: 1:triple waits on counter 0 >= 2 (is 1)" in out
