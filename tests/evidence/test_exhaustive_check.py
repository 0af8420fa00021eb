"""The exhaustive check as a run (:mod:`amkspec.evidence.exhaustive.check`, ``amkspec check-validator``):
shards cover the domain exactly, the executors agree, a checkpoint lets a rerun skip what is done and
continue a shard where it stopped, and a disagreement leaves a minimal witness file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from amkspec.cli import main
from amkspec.evidence.exhaustive import agreement
from amkspec.evidence.exhaustive import check as run_mod
from amkspec.evidence.exhaustive.check import CheckpointError, Report, ShardResult, check, shards
from amkspec.evidence.exhaustive.domain import Bound, Domain, build
from amkspec.executors import make_executor
from amkspec.ir import load

SMALL = Bound(tasks=2, counters=1)
"""162 + 3,807 classes: a few seconds."""
TINY = Bound(tasks=2, buffers=1, counters=1)
"""36 + 297 classes, in 2 + 18 shards of 10 task lists: what the executors share out."""


def _counts(report: Report) -> list[tuple[int, int, bool]]:
    return [(lv.tasks, lv.checked, lv.complete) for lv in report.levels]


@pytest.fixture(scope="module")
def whole() -> Report:
    return check(SMALL)


def test_a_complete_run_checks_every_class_once(whole: Report) -> None:
    domain = Domain(SMALL)
    assert _counts(whole) == [(n, domain.size(n)[1], True) for n in (1, 2)]
    assert whole.complete == 2 and whole.checked_now == 162 + 3807 and not whole.disagreements


@pytest.mark.parametrize("size", [1, 7, 500, 10**6])
def test_shards_cut_the_ranks_without_gap_or_overlap(size: int) -> None:
    cuts = shards(SMALL, size)
    for n in (1, 2):
        mine, raw = [s for s in cuts if s.tasks == n], Domain(SMALL).raw_count(n)
        assert [s.index for s in mine] == list(range(len(mine)))
        assert [(s.start, s.stop) for s in mine] == [(a, min(a + size, raw)) for a in range(0, raw, size)]


@pytest.mark.parametrize("name", ["local", "ray"])
def test_the_executors_give_the_serial_counts(name: str, request: pytest.FixtureRequest) -> None:
    if name == "ray":
        request.getfixturevalue("ray_address")
    with make_executor(name, 2) as pool:
        report = check(TINY, executor=pool, shard_size=10)
    assert _counts(report) == _counts(check(TINY)) and not report.disagreements and not report.failed
    assert report.checked_now == sum(Domain(TINY).size(n)[1] for n in (1, 2))
    assert report.executor == f"{name} (2 workers)"


def test_a_rerun_skips_the_finished_shards_and_continues_a_cut_one(whole: Report, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    class Clock:
        """``time.time`` for the check module: past any deadline after ``left`` more calls."""

        left = 10**9

        def time(self) -> float:
            self.left -= 1
            return 0.0 if self.left > 0 else 1e12

    clock = Clock()
    monkeypatch.setattr(run_mod.time, "time", clock.time)
    clock.left = 400  # the first shard of 2 tasks stops part way
    first = check(SMALL, tmp_path, shard_size=1000, minutes=1)
    lines = [json.loads(line) for line in (tmp_path / "shards.jsonl").read_text().splitlines()]
    cut = lines[-1]
    assert cut["tasks"] == 2 and cut["begin"] == 0 < cut["reached"] < 1000
    assert 0 < first.checked_now < whole.checked_now and not first.levels[1].complete
    clock.left = 10**9
    again = check(SMALL, tmp_path, shard_size=1000)
    assert again.checked_before == first.checked_now
    assert again.checked_before + again.checked_now == whole.checked_now
    assert _counts(again) == _counts(whole)
    lines = [json.loads(line) for line in (tmp_path / "shards.jsonl").read_text().splitlines()]
    assert next(ln for ln in lines if ln["begin"] == cut["reached"])["shard"] == cut["shard"]  # continued
    done = check(SMALL, tmp_path, shard_size=1000)
    assert done.checked_now == 0 and _counts(done) == _counts(whole)


def test_ctrl_c_keeps_the_finished_shards(whole: Report, tmp_path: Path) -> None:
    def stop_after_two(result: ShardResult, report: Report) -> None:
        if len((tmp_path / "shards.jsonl").read_text().splitlines()) == 2:
            raise KeyboardInterrupt

    cut = check(SMALL, tmp_path, shard_size=1000, on_shard=stop_after_two)
    assert cut.interrupted and cut.checked_now < whole.checked_now
    rest = check(SMALL, tmp_path, shard_size=1000)
    assert rest.checked_before == cut.checked_now and _counts(rest) == _counts(whole)


@pytest.mark.parametrize(("change", "word"), [
    ({"bound": Bound(tasks=2, counters=2)}, "bound"),
    ({"shard_size": 999}, "shard_size"),
])
def test_a_checkpoint_of_another_run_is_refused(tmp_path: Path, change: dict[str, Any], word: str) -> None:
    check(Bound(tasks=1, counters=1), tmp_path, shard_size=1000)
    kwargs: dict[str, Any] = {"bound": Bound(tasks=1, counters=1), "shard_size": 1000, **change}
    with pytest.raises(CheckpointError, match=f"another run \\(other {word}\\)"):
        check(kwargs.pop("bound"), tmp_path, **kwargs)


def test_a_checkpoint_of_other_code_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(Bound(tasks=1, counters=1), tmp_path)
    monkeypatch.setattr(run_mod, "code_fingerprint", lambda: "0" * 64)
    with pytest.raises(CheckpointError, match="other the code under check"):
        check(Bound(tasks=1, counters=1), tmp_path)


def test_a_torn_last_line_is_cut_and_a_damaged_one_refused(tmp_path: Path) -> None:
    bound = Bound(tasks=2, counters=1)
    check(bound, tmp_path, shard_size=1000)
    path = tmp_path / "shards.jsonl"
    whole = path.read_text()
    path.write_text(whole + '{"tasks": 2, "sha')  # a crash while appending
    assert check(bound, tmp_path, shard_size=1000).checked_now == 0
    assert path.read_text() == whole
    path.write_text(whole.replace('"classes":', '"classes":-', 1))
    with pytest.raises(CheckpointError, match="does not fit this run"):
        check(bound, tmp_path, shard_size=1000)


def _fake_compare(prog: Any, memo: Any = None) -> str | None:
    """Disagrees on every program in which some task waits for 2 completions."""
    return "waits for 2" if any(w.threshold == 2 for t in prog.tasks for w in t.waits) else None


def test_a_disagreement_leaves_a_minimal_witness_and_exits_1(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agreement, "compare", _fake_compare)
    out = tmp_path / "run"
    args = ["check-validator", "--out", str(out), "--tasks", "1", "--counters", "1"]
    result = CliRunner().invoke(main, [*args, "--quiet"])
    assert result.exit_code == 1, result.stderr
    files = sorted((out / "disagreements").iterdir())
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("disagreement")]
    assert len(files) == len(lines) > 0
    for f in files:
        prog = load(f)
        assert len(prog.tasks) == 1 and [(w.counter, w.threshold) for w in prog.tasks[0].waits] == [(0, 2)]
        assert prog.tasks[0].inputs[0] == 0  # reads x: the source was made plain
        assert prog.meta["exhaustive"]["reason"] == "waits for 2"
    rerun = CliRunner().invoke(main, [*args, "--json"])
    assert rerun.exit_code == 1 and len(json.loads(rerun.stdout)["disagreements"]) == len(files)


def test_minimize_keeps_the_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agreement, "compare", _fake_compare)
    big = ((0, 1), (0,), False, ((0, 1, 0, 0, (2,), -1), (-1, 0, -1, 0, (1,), -1)))
    small = run_mod.minimize(big)
    assert _fake_compare(build(small)) is not None
    assert small == ((0, 0), (0,), False, ((-1, 1, -1, 0, (2,), -1),))


def test_cli_prints_the_table_and_refuses_bad_domains(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["check-validator", "--out", str(tmp_path), "--tasks", "1",
                                   "--counters", "1"])
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.splitlines()[:3] == ["| tasks | programs | symmetry classes | checked |",
                                          "|---:|---:|---:|---|", "| 1 | 486 | 162 | all |"]
    assert ok.stdout.splitlines()[3].startswith("complete up to 1 task(s); classes checked: 162 in ")
    assert ok.stderr == "all 162 classes of 1 task(s) checked" + ok.stderr.split("checked", 1)[1]
    for args, words in [
        (["--counters", "4"], "the domain: counters must be an integer from 1 to 3, not 4"),
        (["--buffers", "3", "--pages"], "the domain: pages needs exactly 2 data buffers"),
        (["--executor", "serial", "--workers", "2"], "--workers needs --executor local or ray"),
    ]:
        bad = CliRunner().invoke(main, ["check-validator", "--out", str(tmp_path / "x"), *args])
        assert bad.exit_code == 2 and bad.stderr.startswith(f"amkspec: error: {words}"), bad.stderr
        assert len(bad.stderr.splitlines()) == 1
