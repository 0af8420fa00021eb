"""Where independent jobs run: one seam, three executors ("Running at scale" guide).

- ``serial`` (the default): each job in this process, in order;
- ``local``: a process pool of the standard library (:class:`concurrent.futures.ProcessPoolExecutor`,
  started with ``spawn``) on this machine;
- ``ray``: tasks of a Ray cluster (the ``ray`` extra): ``ray.init()`` starts a local one, or
  ``address`` joins a running cluster. Ray places the jobs, gives each its resources (one CPU, and
  ``gpus_per_job`` GPUs) and re-runs a job whose worker process died, up to ``retries`` times.

A job is a picklable module-level function applied to a picklable item. :meth:`Executor.imap` runs
the items (at most :attr:`Executor.window` at a time, drawn lazily from an iterable) and yields
``(index, result)`` as each finishes, in any order: a caller that needs an order restores it from
the index. A job that raised, or whose worker died (after Ray's retries), yields a :class:`Failed`
with the reason instead of a result: one bad job never stops the others. Leaving the iteration
early (Ctrl-C, ``break``) cancels the jobs in flight: Ray cancels its tasks (killing their workers),
the process pool is terminated.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from amkspec.ir.errors import AmkspecError

EXECUTORS = ("serial", "local", "ray")
"""The executor names (``--executor``)."""
RETRIES = 2
"""How many times Ray runs a job again after its worker process died (``max_retries``)."""
ORPHAN_POLL_S = 1.0
"""How often a pool worker checks that the process that started it is still there."""


class ExecutorError(AmkspecError):
    """An executor that cannot be used as asked: an unknown name, a bad option, a cluster not reached."""


@attrs.frozen
class Failed:
    """A job that gave no result: it raised, or its worker died (and Ray's retries did too)."""

    reason: str


def _reason(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Executor:
    """Runs jobs; see the module docstring. Use it as a context manager (or call :meth:`close`)."""

    name = "serial"
    workers = 1

    @property
    def window(self) -> int:
        """The most jobs in flight at once: enough that no worker waits for the caller."""
        return 2 * self.workers

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """``(index, fn(item) or Failed)`` for each item, in this process, in order."""
        for i, item in enumerate(items):
            try:
                result = fn(item)
            except Exception as exc:  # noqa: BLE001 - a failed job is a Failed, as on the other executors
                result = Failed(f"the job raised {_reason(exc)}")
            yield i, result

    def describe(self) -> str:
        """``serial``, ``local (2 workers)``, ``ray (8 workers, cluster at ADDRESS)``."""
        return self.name

    def close(self) -> None:
        """Release the workers (nothing to release for ``serial``)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pool_worker() -> None:
    """Set up a pool worker: Ctrl-C is left to the caller, which cancels the workers (a terminal
    signals the whole process group); and the worker ends when its caller does, however it ended
    (a worker blocked on the job queue would otherwise wait forever: it holds both ends of the pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def orphaned() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL_S)
        os._exit(1)

    threading.Thread(target=orphaned, name="amkspec-orphan-watch", daemon=True).start()


class LocalExecutor(Executor):
    """A standard-library process pool of ``workers`` processes. It does not retry: the jobs in
    flight when a worker dies are :class:`Failed` (the pool breaks), and a new pool runs the rest."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self._pool: cf.ProcessPoolExecutor | None = None

    def describe(self) -> str:
        return f"local ({self.workers} workers)"

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_pool_worker)
        return self._pool

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        source = enumerate(items)
        flight: dict[cf.Future[Any], int] = {}
        try:
            while True:
                for i, item in source:
                    flight[self._get_pool().submit(fn, item)] = i
                    if len(flight) >= self.window:
                        break
                if not flight:
                    return
                done, _ = cf.wait(flight, return_when=cf.FIRST_COMPLETED)
                for future in sorted(done, key=flight.__getitem__):
                    exc = future.exception()
                    if isinstance(exc, cf.process.BrokenProcessPool):
                        yield from self._broken(flight, exc)
                        break
                    i = flight.pop(future)
                    yield i, Failed(f"the job raised {_reason(exc)}") if exc is not None else future.result()
        finally:
            if flight:
                self._terminate()

    def _broken(self, flight: dict[cf.Future[Any], int], exc: BaseException) -> Iterator[tuple[int, Any]]:
        """Every job in flight in a pool whose worker died fails (which one it was is unknown)."""
        why = Failed(f"a worker process died (the local executor does not retry): {_reason(exc)}")
        indices = sorted(flight.values())
        flight.clear()
        self._terminate()
        for i in indices:
            yield i, why

    def _terminate(self) -> None:
        """Stop the pool now, its running jobs included (the next job starts a new pool)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list(getattr(pool, "_processes", {}).values())  # no public API before Python 3.14
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.kill()
        for process in processes:
            process.join()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class RayExecutor(Executor):
    """Ray tasks: ``max_retries`` = ``retries``, one CPU and ``gpus_per_job`` GPUs each. Joins the
    cluster at ``address``, or uses the Ray session this process already has, or starts a local one
    (with ``workers`` CPUs), which :meth:`close` shuts down."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, *, retries: int = RETRIES,
                 gpus_per_job: float = 0) -> None:
        import logging

        import ray

        self._ray = ray
        self.address = address
        self.retries = retries
        self.gpus_per_job = gpus_per_job
        self._owned = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"address": address} if address else {"num_cpus": workers}
            try:
                ray.init(**kwargs, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            except Exception as exc:  # noqa: BLE001 - ray raises ConnectionError, RuntimeError, ValueError...
                where = f"join the Ray cluster at {address}" if address else "start a local Ray instance"
                raise ExecutorError(f"cannot {where}: {_reason(exc)}") from None
            self._owned = True
        self.workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote: dict[Callable[..., Any], Any] = {}

    def describe(self) -> str:
        where = f", cluster at {self.address}" if self.address else ""
        return f"ray ({self.workers} workers{where})"

    def _task(self, fn: Callable[[Any], Any]) -> Any:
        if fn not in self._remote:
            self._remote[fn] = self._ray.remote(fn).options(
                max_retries=self.retries, retry_exceptions=False, num_cpus=1, num_gpus=self.gpus_per_job)
        return self._remote[fn]

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        ray, task = self._ray, self._task(fn)
        source = enumerate(items)
        flight: dict[Any, int] = {}
        try:
            while True:
                for i, item in source:
                    flight[task.remote(item)] = i
                    if len(flight) >= self.window:
                        break
                if not flight:
                    return
                done, _ = ray.wait(list(flight), num_returns=1)
                for ref in done:
                    i = flight.pop(ref)
                    yield i, self._result(ref)
        finally:
            for ref in flight:
                ray.cancel(ref, force=True)

    def _result(self, ref: Any) -> Any:
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(ref)
        except exceptions.RayTaskError as exc:  # the job itself raised (never retried)
            return Failed(f"the job raised {_reason(getattr(exc, 'cause', None) or exc)}")
        except exceptions.RayError as exc:  # the worker or its node died, after max_retries
            return Failed(f"its worker died {self.retries + 1} times (Ray retries a job {self.retries} "
                          f"times): {_reason(exc)}")

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False


def make_executor(name: str = "serial", workers: int | None = None, address: str | None = None, *,
                  gpus_per_job: float = 0) -> Executor:
    """The executor called ``name`` (:data:`EXECUTORS`); :class:`ExecutorError` for options it cannot
    honour (``address`` is Ray's, ``serial`` has one worker)."""
    if name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {name!r} (use {', '.join(EXECUTORS)})")
    if workers is not None and workers < 1:
        raise ExecutorError(f"--workers must be at least 1, not {workers}")
    if address is not None and name != "ray":
        raise ExecutorError(f"--address joins a Ray cluster: it needs --executor ray, not {name}")
    if name == "serial":
        if workers not in (None, 1):
            raise ExecutorError("--workers needs --executor local or ray (serial runs one job at a time)")
        return Executor()
    if name == "local":
        return LocalExecutor(workers)
    return RayExecutor(workers, address, gpus_per_job=gpus_per_job)
