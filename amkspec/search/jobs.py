"""What a search's workers run: the validate-run-compare half of a verdict (:meth:`Evaluator.judge`).

The driver proposes, lowers and looks up the cache (:mod:`amkspec.search.loop`); a :class:`Job`
carries one lowered candidate to an executor (:mod:`amkspec.executors`), and :func:`judge` returns
its verdict and, for a program ``validate()`` rejected, the :class:`Rejection` whose counterexample
the driver writes. Workers write no file. A worker process keeps the :class:`Evaluator` of the last
:class:`EvaluatorSpec` it saw, so the model's weights and eager logits are made once per worker.
"""

from __future__ import annotations

import hashlib
import pickle
import time

import attrs

from amkspec.ir import GpuTarget
from amkspec.models.config import ModelConfig
from amkspec.search.evaluate import INTERNAL, Evaluator, Prepared, VmRunner, describe
from amkspec.search.verdict import Verdict
from amkspec.search.witnesses import Rejection


@attrs.frozen
class EvaluatorSpec:
    """What a worker needs to build the search's :class:`Evaluator` (the lowering stays on the driver)."""

    model: ModelConfig
    target: GpuTarget
    vm: str
    timeout_s: float
    runner: VmRunner | None
    token: int

    def build(self) -> Evaluator:
        return Evaluator(self.model, self.target, vm=self.vm, timeout_s=self.timeout_s, runner=self.runner,
                         token=self.token)

    def key(self) -> str:
        """Identifies the spec across processes: the digest of its pickle (of its ``id`` when a
        plugged-in runner does not pickle, e.g. a lambda on the serial or Ray executor)."""
        try:
            return hashlib.sha256(pickle.dumps(self)).hexdigest()
        except Exception:  # noqa: BLE001 - pickling may fail in many ways
            return f"unpicklable-{id(self)}"


@attrs.frozen
class Job:
    """One lowered candidate to judge, and the evaluator (``key``, ``spec``) that judges it."""

    key: str
    spec: EvaluatorSpec
    prepared: Prepared


@attrs.frozen
class Outcome:
    """A judged candidate: its verdict (no witness yet), its rejection, and the seconds it took."""

    verdict: Verdict
    rejection: Rejection | None
    seconds: float


_evaluator: dict[str, Evaluator] = {}
"""This process's evaluator, by spec key (one at a time)."""


def judge(job: Job) -> Outcome:
    """Judge ``job`` in this process (the executors' job function)."""
    started = time.perf_counter()
    evaluator = _evaluator.get(job.key)
    if evaluator is None:
        forget()
        evaluator = _evaluator[job.key] = job.spec.build()
    try:
        verdict, rejection = evaluator.judge(job.prepared)
    except Exception as exc:  # noqa: BLE001 - evaluate()'s boundary: an internal error is still a verdict
        verdict, rejection = evaluator.error(job.prepared.schedule_id, describe(exc), INTERNAL), None
    return Outcome(verdict, rejection, time.perf_counter() - started)


def forget() -> None:
    """Drop this process's evaluator (its weights) when a search ends."""
    _evaluator.clear()
