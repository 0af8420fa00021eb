"""A search judged on a process pool or on Ray is the serial search, row for row (issue 29): the
same ``results.tsv``, cache and incumbent; a worker killed mid-candidate is retried, then its trial
is an ``error`` verdict; Ctrl-C (a real SIGINT) cancels the candidates in flight and leaves a state
``--resume`` continues to the serial run's files."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from amkspec.executors import RayExecutor, make_executor
from amkspec.search import SearchResult, Trial, search
from tests.conftest import ROOT
from tests.search.gated import Gate
from tests.test_executors import _gone

LOCAL = pytest.param("local", marks=pytest.mark.slow)
"""The process pool runs the same rounds as Ray (the executor-level tests cover its semantics in CI);
its search runs are in the slow set: each spawns workers that import torch."""

SEED = 3
"""toy on h100, seed 3, rounds of 4: round 1 (trials 4-7) keeps trial 5 and only tries trial 7."""


def _files(out: Path) -> dict[str, str]:
    """``results.tsv`` and ``cache.json``, the run's own folder name (in witness paths) left out."""
    return {name: (out / name).read_text().replace(str(out), "OUT") for name in ("results.tsv", "cache.json")}


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> tuple[SearchResult, dict[str, str]]:
    out = tmp_path_factory.mktemp("serial")
    result = search("toy", "h100", 8, out, seed=SEED)
    return result, _files(out)


@pytest.mark.parametrize("name", [LOCAL, "ray"])
def test_a_parallel_search_writes_the_serial_files(name: str, request: pytest.FixtureRequest,
                                                   serial: tuple[SearchResult, dict[str, str]],
                                                   tmp_path: Path) -> None:
    if name == "ray":
        request.getfixturevalue("ray_address")
    with make_executor(name, 2) as pool:
        result = search("toy", "h100", 8, tmp_path, seed=SEED, executor=pool)
    whole, files = serial
    assert _files(tmp_path) == files
    assert result.incumbent is not None and whole.incumbent is not None
    assert result.incumbent.trial == whole.incumbent.trial
    assert result.summary()["statuses"] == whole.summary()["statuses"]


def _sha(t: Trial) -> str:
    assert t.verdict.program_sha256 is not None
    return t.verdict.program_sha256


def _killer(gate: Path, deaths: dict[str, int], stop: threading.Event) -> collections.Counter[str]:
    """Kill each worker that holds a program, ``deaths[hash]`` times per program; then release it."""
    killed: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()

    def loop() -> None:
        while not stop.is_set():
            for held in sorted(gate.glob("*.held")):
                if held.name not in seen:
                    seen.add(held.name)
                    sha, pid, _ = held.name.split(".")
                    if killed[sha] < deaths[sha]:
                        os.kill(int(pid), signal.SIGKILL)
                        killed[sha] += 1
                    else:
                        (gate / f"{sha}.go").touch()
            stop.wait(0.05)

    threading.Thread(target=loop, daemon=True).start()
    return killed


def test_a_killed_worker_is_retried_then_its_trial_is_an_error_row(
        ray_address: str, serial: tuple[SearchResult, dict[str, str]], tmp_path: Path) -> None:
    whole, files = serial
    last_round = whole.trials[4:]
    survivor = next(t for t in last_round if t.status == "kept")  # killed once, retried: as serial
    victim = whole.trials[-1]  # killed on every try: an error row; it was only tried, so nothing after moves
    assert victim.status == "tried" and victim.trial > survivor.trial
    gate, stop = tmp_path / "gate", threading.Event()
    gate.mkdir()
    killed = _killer(gate, {_sha(survivor): 1, _sha(victim): 99}, stop)
    try:
        with RayExecutor(retries=1) as pool:
            result = search("toy", "h100", 8, tmp_path / "run", seed=SEED, executor=pool,
                            runner=Gate(str(gate), (_sha(survivor), _sha(victim))))
    finally:
        stop.set()
    assert killed == {_sha(survivor): 1, _sha(victim): 2}  # max_retries=1: two deaths, then no more tries
    assert not result.interrupted and [t.trial for t in result.trials] == list(range(8))
    rows = _files(tmp_path / "run")["results.tsv"].splitlines()
    expected = files["results.tsv"].splitlines()
    assert rows[:-1] == expected[:-1]  # every other trial, the retried one among them, as in the serial run
    lost = result.trials[-1]
    assert (lost.status, lost.verdict.failure, lost.verdict.schedule_id) == ("crash", "error",
                                                                           victim.verdict.schedule_id)
    assert lost.reason.startswith("internal error: its worker died 2 times (Ray retries a job 1 times)")
    assert lost.verdict.program_sha256 == _sha(victim) and not lost.cached


@pytest.mark.parametrize("name", [LOCAL, "ray"])
def test_sigint_cancels_the_candidate_in_flight_and_resume_finishes_the_serial_run(
        name: str, request: pytest.FixtureRequest, serial: tuple[SearchResult, dict[str, str]],
        tmp_path: Path) -> None:
    whole, files = serial
    held = _sha(whole.trials[5])
    gate, out = tmp_path / "gate", tmp_path / "run"
    gate.mkdir()
    address = [request.getfixturevalue("ray_address")] if name == "ray" else []
    args = [sys.executable, "-m", "tests.search.gated", str(out), str(gate), "8", str(SEED), name, *address,
            held]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    driver = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": path}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not list(gate.glob("*.held")):
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "trial 5 never reached a worker"
            time.sleep(0.05)
        worker = int(next(gate.glob("*.held")).name.split(".")[1])
        driver.send_signal(signal.SIGINT)
        stdout, stderr = driver.communicate(timeout=120)
    finally:
        driver.kill()
    assert driver.returncode == 130, stderr
    assert int(stdout) in (4, 5)  # round 0 and maybe trial 4; never trial 5, whose job was cancelled
    assert _gone(worker), "the worker judging trial 5 was left running"
    (gate / f"{held}.go").touch()
    resumed = search("toy", "h100", 8, out, seed=SEED, resume=True, runner=Gate(str(gate), (held,)))
    assert _files(out)["results.tsv"] == files["results.tsv"]
    ours, theirs = (json.loads(f["cache.json"])["entries"] for f in (_files(out), files))
    assert {k: e["verdict"] for k, e in ours.items()} == {k: e["verdict"] for k, e in theirs.items()}
    # (the contexts differ: a plugged-in runner is part of a cache entry's identity)
    assert resumed.incumbent is not None and resumed.incumbent.trial == whole.incumbent.trial  # type: ignore[union-attr]
    assert json.loads((out / "state.json").read_text())["options"]["runner"] == "tests.search.gated:Gate"
