"""``search``/``evaluate`` usage: non-finite numbers, a resume with other options, hand-edited state.

Each refusal is one ``amkspec: error:`` line on stderr and exit 2, never a run with a NaN option,
a run that mixes two lowerings, or an internal error (exit 3).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main

RACY = "amkspec.search.examples:racy_prefetch_lowering"


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _search(out: Path, budget: int, *extra: str) -> Result:
    return _cli("search", "toy", "--target", "h100", "--budget", str(budget), "--out", str(out), "--quiet",
                *extra)


def _refused(result: Result, *words: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error:"), result.stderr
    assert all(w in lines[0] for w in words), lines[0]


@pytest.mark.parametrize("value", ["nan", "NaN", "-nan", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize("option", ["--explore", "--probe", "--timeout"])
def test_search_refuses_a_non_finite_number(tmp_path: Path, option: str, value: str) -> None:
    _refused(_search(tmp_path / "run", 2, option, value), option)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "abc"])
def test_evaluate_refuses_a_timeout_that_is_not_a_finite_number(value: str) -> None:
    result = _cli("evaluate", "toy", "--target", "h100", "--vm", "cpu-kernel", "--timeout", value)
    _refused(result, "--timeout")


@pytest.mark.parametrize(("first", "then", "word"), [
    (["--lowering", RACY], [], "lowering"),
    ([], ["--lowering", RACY], "lowering"),
    (["--timeout", "5"], [], "timeout_s"),
    ([], ["--seed", "1"], "seed"),
])
def test_resume_refuses_another_lowering_or_timeout(tmp_path: Path, first: list[str], then: list[str],
                                                    word: str) -> None:
    out = tmp_path / "run"
    assert _search(out, 2, *first).exit_code in (0, 1)
    before = (out / "state.json").read_text()
    _refused(_search(out, 4, "--resume", *then), "other options", word)
    assert (out / "state.json").read_text() == before
    assert _search(out, 3, "--resume", *first).exit_code in (0, 1)  # the same options go on


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 3-trial search (trial 0 kept, trial 1 a knob rejection, trial 2 kept)."""
    out = tmp_path_factory.mktemp("saved") / "run"
    assert _search(out, 3, "--seed", "3").exit_code == 0
    return out


def _trial(status: str) -> Callable[[dict[str, Any]], Any]:
    return lambda d: next(t for t in d["trials"] if t["status"] == status)


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "config not an object": lambda d: _trial("kept")(d).update(config=[1, 2]),
    "trial not a number": lambda d: d["trials"][1].update(trial="x"),
    "trial a bool": lambda d: d["trials"][1].update(trial=True),
    "duplicated trial": lambda d: d["trials"].insert(1, d["trials"][0]),
    "trials out of order": lambda d: d["trials"].reverse(),
    "unknown source": lambda d: d["trials"][1].update(source="magic"),
    "cached not a bool": lambda d: d["trials"][1].update(cached=1),
    "negative seconds": lambda d: d["trials"][1].update(seconds=-1),
    "a missing key": lambda d: d["trials"][1].pop("reason"),
    "an extra key": lambda d: d["trials"][1].update(extra=1),
    "a status the verdict does not give": lambda d: d["trials"][2].update(status="tried"),
    "a latency that is text": lambda d: _trial("kept")(d)["verdict"].update(latency_us="fast"),
    "notes not strings": lambda d: d["trials"][0]["verdict"].update(notes=[1]),
    "a verdict of another config": lambda d: _trial("kept")(d)["config"].update(pipelining_depth=3),
    "trials not a list": lambda d: d.update(trials={}),
    "options not an object": lambda d: d.update(options=[]),
    "the whole state a list": lambda d: d.clear(),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_hand_edited_state_is_refused_in_one_line(saved: Path, tmp_path: Path, edit: str) -> None:
    out = tmp_path / "run"
    shutil.copytree(saved, out)
    doc = json.loads((out / "state.json").read_text())
    EDITS[edit](doc)
    (out / "state.json").write_text(json.dumps(doc))
    _refused(_search(out, 6, "--seed", "3", "--resume"), str(out / "state.json"))


def test_the_unedited_state_resumes(saved: Path, tmp_path: Path) -> None:
    shutil.copytree(saved, tmp_path / "run")
    result = _search(tmp_path / "run", 5, "--seed", "3", "--resume", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["trials"] == 5


@pytest.mark.parametrize("command", ["search", "evaluate", "propose"])
def test_a_missing_target_lists_the_targets_on_one_line(command: str) -> None:
    """Issue 27: click lays the choices out as ``\\n\\t``-separated lines, which the one error line
    printed escaped (a literal backslash-n-backslash-t)."""
    result = _cli(command, "toy-2L", *(["--budget", "5"] if command == "search" else []))
    _refused(result, "Missing option '--target'. Choose from: a100, a10g, b200, h100,")
    assert "\\" not in result.stderr


def test_the_round_default_shown_by_help_is_the_library_default() -> None:
    from amkspec.cli.commands.search import ROUND_HELP
    from amkspec.search.loop import ROUND_SIZE

    assert str(ROUND_SIZE) == ROUND_HELP
    assert f"[default: ({ROUND_SIZE}); 1<=x<=4096]" in _cli("search", "--help").stdout
