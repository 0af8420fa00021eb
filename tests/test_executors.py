"""The executor seam (:mod:`amkspec.executors`): every result once with its index, failures as
:class:`Failed`, a dead worker retried by Ray (bounded), a broken process pool replaced."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from amkspec.executors import Executor, ExecutorError, Failed, LocalExecutor, RayExecutor, make_executor


def square_or_raise(x: int) -> int:
    if x == 3:
        raise ValueError(f"no {x}")
    return x * x


def die_unless_marked(path: str) -> int:
    """Kill this worker process, unless ``path`` exists; a path ending in ``once`` is created first,
    so that the job dies once and succeeds when run again."""
    marker = Path(path)
    if marker.exists():
        return os.getpid()
    if path.endswith("once"):
        marker.touch()
    os.kill(os.getpid(), signal.SIGKILL)
    return -1


def _executor(name: str, request: pytest.FixtureRequest) -> Executor:
    if name == "ray":
        request.getfixturevalue("ray_address")
    return make_executor(name, None if name == "serial" else 2)


@pytest.mark.parametrize("name", ["serial", "local", "ray"])
def test_each_item_gives_one_result_with_its_index(name: str, request: pytest.FixtureRequest) -> None:
    with _executor(name, request) as ex:
        results = list(ex.imap(square_or_raise, iter(range(7))))
    assert sorted(i for i, _ in results) == list(range(7))
    by_index = dict(results)
    assert by_index[3] == Failed("the job raised ValueError: no 3")
    assert all(by_index[i] == i * i for i in range(7) if i != 3)
    if name == "serial":
        assert [i for i, _ in results] == list(range(7))


def test_ray_retries_a_dead_worker_a_bounded_number_of_times(ray_address: str, tmp_path: Path) -> None:
    once, always = tmp_path / "dies-once", tmp_path / "dies-always"
    with RayExecutor(retries=1) as ex:
        results = dict(ex.imap(die_unless_marked, [str(once), str(always)]))
    assert isinstance(results[0], int) and results[0] > 0  # died once, retried, succeeded
    failed = results[1]
    assert isinstance(failed, Failed)
    assert failed.reason.startswith("its worker died 2 times (Ray retries a job 1 times)")


def test_a_dead_local_worker_fails_its_jobs_and_a_new_pool_runs_the_rest(tmp_path: Path) -> None:
    with LocalExecutor(1) as ex:
        results = list(ex.imap(die_unless_marked, [str(tmp_path / "x"), *[str(tmp_path)] * 4]))
    assert sorted(i for i, _ in results) == list(range(5))
    by_index = dict(results)
    assert isinstance(by_index[0], Failed) and "a worker process died" in by_index[0].reason
    assert all(isinstance(by_index[i], int) for i in (2, 3, 4))  # after the broken pool's window of 2


@pytest.mark.parametrize("name", ["local", "ray"])
def test_leaving_early_kills_the_jobs_in_flight(name: str, request: pytest.FixtureRequest,
                                                tmp_path: Path) -> None:
    """What Ctrl-C does: the job still running is killed, not left to finish."""
    with _executor(name, request) as ex:
        jobs = ex.imap(sleep_and_report, [(str(tmp_path / "fast"), 0.0), (str(tmp_path / "slow"), 600.0)])
        assert next(jobs)[0] == 0
        pid = _wait_for(tmp_path / "slow")
        jobs.close()
        assert _gone(pid), f"the {name} worker of the job in flight is still running"


def sleep_and_report(job: tuple[str, float]) -> int:
    import time

    path, seconds = job
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return os.getpid()


def _wait_for(path: Path, timeout: float = 120.0) -> int:
    import time

    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 30.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            return True  # a zombie: dead, not yet reaped by its parent
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(("args", "words"), [
    (("threads",), "unknown executor 'threads'"),
    (("local", 0), "--workers must be at least 1"),
    (("serial", 2), "--workers needs --executor local or ray"),
    (("local", None, "127.0.0.1:1"), "--address joins a Ray cluster: it needs --executor ray"),
])
def test_make_executor_refuses_what_it_cannot_honour(args: tuple[object, ...], words: str) -> None:
    with pytest.raises(ExecutorError, match=words):
        make_executor(*args)  # type: ignore[arg-type]


_ORPHANING_DRIVER = """
import sys
from amkspec.executors import LocalExecutor
from tests.test_executors import sleep_and_report
next(LocalExecutor(1).imap(sleep_and_report, [(sys.argv[1], 600.0)]))
"""


def test_pool_workers_end_when_their_caller_is_killed(tmp_path: Path) -> None:
    """No process is left behind by a caller that could not clean up (SIGKILL)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    driver = subprocess.Popen([sys.executable, "-c", _ORPHANING_DRIVER, str(tmp_path / "job")], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": path})
    try:
        worker = _wait_for(tmp_path / "job")
    finally:
        driver.kill()
        driver.wait()
    gone = _gone(worker, timeout=15.0)
    if not gone:
        os.kill(worker, signal.SIGKILL)
    assert gone, "the pool worker outlived its killed caller"
