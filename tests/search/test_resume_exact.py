"""A resumed search equals an uninterrupted one, wherever between its writes the stop landed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amkspec.search import files, search

BUDGET, SEED = 6, 3
"""Toy on h100 with seed 3: trials 1 and 2 are knob probes (a witness file each, written when the
first round is proposed, before trial 0 is recorded), the others lower and run."""


def _writes(monkeypatch: pytest.MonkeyPatch, stop_at: int | None = None) -> list[str]:
    """Record the name of every file the search writes; raise Ctrl-C instead of write ``stop_at``."""
    names: list[str] = []
    real = files.write_atomic

    def spy(path: str | Path, text: str) -> None:
        if len(names) == stop_at:
            raise KeyboardInterrupt
        names.append(Path(path).name)
        real(path, text)

    monkeypatch.setattr(files, "write_atomic", spy)
    return names


def _run(out: Path, resume: bool = False) -> dict[str, Any]:
    summary = search("toy", "h100", BUDGET, out, seed=SEED, resume=resume).summary()
    del summary["out_dir"], summary["interrupted"]
    return summary


def _files(out: Path) -> dict[str, Any]:
    """What the run wrote, its own folder's name (in witness paths) and the trials' timings left out."""
    def read(name: str) -> str:
        return (out / name).read_text().replace(str(out), "OUT")

    state = json.loads(read("state.json"))
    for t in state["trials"]:
        del t["seconds"]
    return {"state": state, "results": read("results.tsv"), "cache": json.loads(read("cache.json")),
            "witnesses": sorted(p.name for p in (out / "witnesses").iterdir())}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The uninterrupted run: its summary, its files and the names of its writes in order."""
    out = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        names = _writes(mp)
        summary = _run(out)
    return summary, _files(out), names


WITNESS = "knob_range@tiling.attention.kv_block.json"
"""Trial 2's counterexample: written while trials 0 and 1 of its round are not recorded yet."""


@pytest.mark.parametrize("before", ["state.json", "results.tsv", "cache.json", WITNESS])
def test_a_stop_before_any_write_resumes_to_the_same_files_and_summary(
        whole: tuple[dict[str, Any], dict[str, Any], list[str]], before: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    summary, written, names = whole
    stop = names.index(before, 0 if before == WITNESS else 6)  # trial 2's witness, else trial ≥ 1's
    _writes(monkeypatch, stop)
    interrupted = search("toy", "h100", BUDGET, tmp_path, seed=SEED)
    assert interrupted.interrupted and len(interrupted.trials) < BUDGET
    monkeypatch.undo()
    assert _run(tmp_path, resume=True) == summary
    assert _files(tmp_path) == written
