"""The correctness-gated search: keep/revert rules, determinism, resume, the cache guard, artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from amkspec.cli import main
from amkspec.ir import MegakernelProgram
from amkspec.search import Search, SearchOptions, Trial, Verdict, decide, search
from amkspec.search.evaluate import default_lowering
from amkspec.search.examples import PerturbedVM, racy_prefetch_lowering
from amkspec.search.space import default_document

OPTIONS = SearchOptions("toy", "h100", budget=10, seed=3)


def _rows(out: Path) -> list[str]:
    return (out / "results.tsv").read_text().splitlines()


def _correct(latency: float, kind: str = "predicted") -> Verdict:
    return Verdict(valid=True, correct=True, latency_us=latency, latency_kind=kind,
                   gpu_timed=kind != "predicted")


def _trial(v: Verdict, config: dict[str, Any] | None = None) -> Trial:
    return Trial(0, "default", "-", config or default_document(), v, "kept", False, "", 0.0)


@pytest.mark.parametrize(("latency", "kind", "config", "status"), [
    (98.9, "predicted", None, "kept"),  # a ≥1% win
    (99.5, "predicted", None, "tried"),  # under 1%: not a win, not simpler
    (100.5, "measured-gpu", None, "kept"),  # within ±1%: measured beats predicted
    (100.5, "predicted", {**default_document(), "pipelining_depth": 0}, "kept"),  # within ±1%: simpler
    (99.2, "predicted", {**default_document(), "pipelining_depth": 4}, "tried"),  # within ±1%, less simple
    (101.5, "predicted", {**default_document(), "pipelining_depth": 0}, "tried"),  # simpler but 1.5% slower
])
def test_keep_rules(latency: float, kind: str, config: dict[str, Any] | None, status: str) -> None:
    incumbent = _trial(_correct(100.0))
    assert decide(_correct(latency, kind), config or default_document(), incumbent)[0] == status


def test_a_correct_verdict_without_a_latency_is_never_kept() -> None:
    """The floor guard drops some latencies (medium's predictions): such a verdict cannot win."""
    no_latency = Verdict(valid=True, correct=True, notes=("below the floor",))
    assert decide(no_latency, default_document(), None)[0] == "tried"
    assert decide(no_latency, default_document(), _trial(_correct(100.0)))[0] == "tried"
    assert decide(_correct(100.0), default_document(), None)[0] == "kept"


def test_failures_are_never_kept() -> None:
    rejected = Verdict(valid=False, rejected_reason="knob:type tiling", failure="rejected")
    wrong = Verdict(valid=True, failure="mismatch")
    timeout = Verdict(valid=True, failure="timeout")
    assert [decide(v, default_document(), None)[0] for v in (rejected, wrong, timeout)] == [
        "rejected", "reverted", "timeout"]


def test_search_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    a = search("toy", "h100", 10, tmp_path / "a", seed=3)
    b = search("toy", "h100", 10, tmp_path / "b", seed=3)
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    assert a.incumbent is not None and b.incumbent is not None
    assert a.incumbent.verdict.schedule_id == b.incumbent.verdict.schedule_id
    search("toy", "h100", 10, tmp_path / "c", seed=4)
    assert _rows(tmp_path / "c") != _rows(tmp_path / "a")


def test_results_tsv_has_one_row_per_trial_and_each_schedule_once(tmp_path: Path) -> None:
    result = search("toy", "h100", 12, tmp_path, seed=1)
    rows = [r.split("\t") for r in _rows(tmp_path)]
    header, body = rows[0], rows[1:]
    assert header[:8] == ["trial", "schedule_id", "program_sha256", "valid", "correct", "latency_us",
                          "latency_kind", "status"]
    assert [int(r[0]) for r in body] == list(range(12)) and len(result.trials) == 12
    assert body[0][header.index("source")] == "default" and body[0][header.index("status")] == "kept"
    assert len({r[1] for r in body}) == len(body)  # never the same schedule twice
    for r in body:
        row = dict(zip(header, r, strict=True))
        assert (row["latency_us"] != "") == (row["correct"] == "True")
        assert row["status"] in ("kept", "tried", "reverted", "rejected", "crash", "timeout")


def test_resume_after_an_interruption_reaches_the_same_incumbent(tmp_path: Path) -> None:
    whole = search("toy", "h100", 10, tmp_path / "whole", seed=3)

    def stop_after_four(trial: Trial, incumbent: Trial | None) -> None:
        if trial.trial == 3:
            raise KeyboardInterrupt

    cut = search("toy", "h100", 10, tmp_path / "cut", seed=3, on_trial=stop_after_four)
    assert cut.interrupted and len(cut.trials) == 4 and len(_rows(tmp_path / "cut")) == 5
    resumed = search("toy", "h100", 10, tmp_path / "cut", seed=3, resume=True)
    assert _rows(tmp_path / "cut") == _rows(tmp_path / "whole")
    assert resumed.incumbent is not None and whole.incumbent is not None
    assert resumed.incumbent.verdict.schedule_id == whole.incumbent.verdict.schedule_id
    assert resumed.cache_hits == 0  # the resumed trials were new, nothing re-evaluated


def test_resume_refuses_other_options_and_a_fresh_run_refuses_an_old_dir(tmp_path: Path) -> None:
    from amkspec.search.loop import SearchStateError

    search("toy", "h100", 2, tmp_path, seed=3)
    with pytest.raises(SearchStateError, match="other options"):
        search("toy", "h100", 4, tmp_path, seed=4, resume=True)
    with pytest.raises(SearchStateError, match="--resume"):
        search("toy", "h100", 4, tmp_path, seed=3)
    (tmp_path / "state.json").write_text("{truncated")
    with pytest.raises(SearchStateError, match="cannot resume"):
        search("toy", "h100", 4, tmp_path, seed=3, resume=True)


def test_a_wrong_vm_makes_the_search_keep_nothing(tmp_path: Path) -> None:
    result = search("toy", "h100", 8, tmp_path, seed=0, runner=PerturbedVM())
    assert result.incumbent is None
    assert {t.status for t in result.trials} <= {"reverted", "rejected"}
    assert all(t.verdict.latency_us is None for t in result.trials)
    assert "reverted" in {t.status for t in result.trials}


def _stamped(model: Any, target: Any, config: Any, pos: int) -> MegakernelProgram:
    prog = default_lowering(model, target, config, pos)
    prog.meta["lowering"] = "v2"  # a changed lowering: a different program for the same config
    return prog


def test_the_cache_is_trusted_only_for_the_same_program(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache.json"
    first = Search(OPTIONS, tmp_path / "a", cache_path=cache).run()
    assert first.cache_hits == 0 and json.loads(cache.read_text())["entries"]
    same = Search(OPTIONS, tmp_path / "b", cache_path=cache).run()
    lowered = sum(t.verdict.program_sha256 is not None for t in same.trials)
    assert same.cache_hits == lowered > 0 and all(t.cached for t in same.trials if t.verdict.program_sha256)
    changed = Search(OPTIONS, tmp_path / "c", cache_path=cache, lowering=_stamped).run()
    assert changed.cache_hits == 0 and changed.stale == lowered
    assert not any(t.cached for t in changed.trials)
    entries = json.loads(cache.read_text())["entries"]
    by_id = {t.verdict.schedule_id: t.verdict.program_sha256 for t in changed.trials}
    assert all(entries[sid]["program_sha256"] == sha for sid, sha in by_id.items() if sha)


def test_a_shared_cache_never_trusts_another_vm_of_the_same_name(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache.json"
    options = SearchOptions("toy", "h100", budget=4, seed=3)
    right = Search(options, tmp_path / "a", runner=PerturbedVM(delta=0.0), cache_path=cache).run()
    assert right.incumbent is not None
    wrong = Search(options, tmp_path / "b", runner=PerturbedVM(delta=1.0), cache_path=cache).run()
    assert wrong.cache_hits == 0 and wrong.incumbent is None
    again = Search(options, tmp_path / "c", runner=PerturbedVM(delta=1.0), cache_path=cache).run()
    assert again.cache_hits > 0 and again.incumbent is None


def test_each_distinct_rejection_leaves_one_counterexample(tmp_path: Path) -> None:
    result = search("toy", "h100", 14, tmp_path, seed=0, lowering=racy_prefetch_lowering)
    rejected = [t for t in result.trials if t.status == "rejected"]
    assert rejected
    keys = {Path(t.verdict.witness).name for t in rejected if t.verdict.witness}
    assert keys == {p.name for p in (tmp_path / "witnesses").glob("*.json") if ".program." not in p.name}
    racy = [t for t in rejected if "R303" in t.verdict.rejected_codes]
    assert racy and list((tmp_path / "witnesses").glob("R303*.dot"))
    assert all(t.config["pipelining_depth"] >= 3 for t in racy)


def test_cli_search_writes_results_plot_and_summary(tmp_path: Path) -> None:
    out, plot = tmp_path / "run", tmp_path / "plot.png"
    result = CliRunner().invoke(main, ["search", "toy", "--target", "h100", "--budget", "6", "--out",
                                       str(out), "--plot", str(plot), "--seed", "2"])
    assert result.exit_code == 0, result.stderr
    line, = result.stdout.splitlines()  # one line by default (issue 27)
    assert line.startswith("search toy on h100: 6 trials (") and "incumbent trial" in line
    assert str(out / "results.tsv") in line
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 6 and lines[0].startswith("trial 0 sch_c3af28020e kept")
    assert lines[-1].endswith("[6 of 6 done]")
    again = CliRunner().invoke(main, ["search", "toy", "--target", "h100", "--budget", "8", "--out", str(out),
                                      "--resume", "--quiet", "--seed", "2", "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["trials"] == 8 and again.stderr == ""


def test_progress_json_tsv_and_plot_number_trials_alike(tmp_path: Path) -> None:
    """Issue 27: a kept trial was "11/12" in the progress line but 10 everywhere else."""
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["search", "toy", "--target", "h100", "--budget", "9", "--out",
                                       str(out), "--seed", "2", "--json"])
    assert result.exit_code == 0, result.stderr
    progress = [line.split()[:4] for line in result.stderr.strip().splitlines()]
    rows = [r.split("\t") for r in _rows(out)[1:]]
    assert [(p[1], p[2], p[3]) for p in progress] == [(r[0], r[1], r[7]) for r in rows]
    kept = json.loads(result.stdout)["incumbent"]["trial"]
    assert ["trial", str(kept)] in [p[:2] for p in progress if p[3] == "kept"]


def test_cli_ctrl_c_leaves_a_resumable_run_and_exits_130(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from amkspec.cli.progress import TrialProgress

    out = tmp_path / "run"
    real_progress = TrialProgress.__call__

    def interrupted_after_three(self: TrialProgress, trial: Trial, incumbent: Trial | None) -> None:
        real_progress(self, trial, incumbent)
        if trial.trial == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(TrialProgress, "__call__", interrupted_after_three)
    args = ["search", "toy", "--target", "h100", "--budget", "6", "--out", str(out), "--quiet", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130 and "--resume" in result.stderr
    assert json.loads(result.stdout)["interrupted"] and len(_rows(out)) == 4
    monkeypatch.setattr(TrialProgress, "__call__", real_progress)
    resumed = CliRunner().invoke(main, [*args, "--resume"])
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["trials"] == 6


def test_resume_needs_a_saved_search(tmp_path: Path) -> None:
    """Issue 27: ``--resume --out NEWDIR`` started a fresh run; it is a one-line error (exit 2)."""
    out = tmp_path / "new"
    result = CliRunner().invoke(main, ["search", "toy", "--target", "h100", "--budget", "3", "--out",
                                       str(out), "--resume"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"amkspec: error: {out / 'state.json'}: nothing to resume (no saved search " \
                            "there); leave out --resume to start one\n"
    assert not out.exists()


def test_the_beam_holds_the_k_best_correct_trials(tmp_path: Path) -> None:
    run = Search(SearchOptions("toy", "h100", budget=12, seed=5, beam=3), tmp_path)
    run.run()
    beam = run.beam()
    correct = sorted(t.verdict.latency_us for t in run.trials if t.verdict.latency_us is not None)
    assert len(beam) == 3 and [t.verdict.latency_us for t in beam] == correct[:3]
    assert {t.source for t in run.trials} >= {"default", "exploit"}


def test_progress_is_a_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from amkspec.cli.progress import TrialProgress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    fake = Tty()
    monkeypatch.setattr("sys.stderr", fake)
    progress = TrialProgress(total=2, done=0, quiet=False)
    assert progress.bar is not None
    trial = _trial(_correct(50.0))
    progress(trial, trial)
    progress.close()
    assert "1/2" in fake.getvalue() and "best 50.0 us" in fake.getvalue()
