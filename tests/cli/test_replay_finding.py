"""``replay --finding N`` counts like ``explain --finding N``: 1-based over all findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.programs.small import scale_chain

ORDERED = [{"event": e, "task": t} for e, t in (("start", 0), ("end", 0), ("start", 1), ("end", 1))]
RACY = [{"event": e, "task": t} for e, t in (("start", 0), ("start", 1), ("end", 0), ("end", 1))]
STALE = "task 1:triple read buffer 1:y before writer(s) 0:double ended"


def _explained(tmp_path: Path) -> tuple[str, str]:
    """The racy scale_chain and an explain-style file: 1 rule-only, 2 a clean trace, 3 the race."""
    program = tmp_path / "racy.json"
    amkspec.dump(scale_chain(scale_waits=False), str(program))
    findings = [{"code": "R303", "status": "rule-only", "witness": None},
                {"code": "R303", "status": "witnessed", "witness": {"events": ORDERED}},
                {"code": "R303", "status": "witnessed", "witness": {"events": RACY}}]
    why = tmp_path / "why.json"
    why.write_text(json.dumps({"verdict": "rejected", "findings": findings}))
    return str(program), str(why)


def _replay(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("finding", "code", "out"), [
    ([], 0, "every read saw complete data"),  # default: the first finding that has a witness (2)
    (["--finding", "2"], 0, "every read saw complete data"),
    (["--finding", "3"], 1, STALE),
])
def test_finding_n_is_the_nth_finding_of_explain(tmp_path: Path, finding: list[str], code: int,
                                                 out: str) -> None:
    got = _replay(*_explained(tmp_path), *finding, "--no-finish")
    assert got[0] == code and got[1].startswith(out), got


@pytest.mark.parametrize(("n", "message"), [
    ("1", "finding 1 (rule-only) has no witness to replay"),
    ("4", "there is no finding 4: findings are numbered from 1 and it has 3 findings"),
    ("0", "0 is not in the range x>=1"),
    ("-1", "-1 is not in the range x>=1"),
])
def test_a_finding_without_a_witness_is_refused_in_one_line(tmp_path: Path, n: str, message: str) -> None:
    code, _, err = _replay(*_explained(tmp_path), "--finding", n)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_no_witnessed_finding_at_all_is_refused(tmp_path: Path) -> None:
    program, _ = _explained(tmp_path)
    why = tmp_path / "none.json"
    why.write_text(json.dumps({"findings": [{"status": "rule-only"}, "junk"]}))
    code, _, err = _replay(program, str(why))
    assert code == 2 and "none of its 2 findings has a witness" in err
    code, _, err = _replay(program, str(why), "--finding", "2")
    assert code == 2 and "finding 2 (not an object) has no witness" in err
