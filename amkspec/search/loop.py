"""The correctness-gated schedule search (Loop 2 of the AMK agent contract; keep/revert).

Trial 0 is the default config, the bar to beat. Each later trial *explores* (a fresh random
config; a share of them are edge probes that test the safety net) with probability ``explore``
or while nothing correct is known, and otherwise *exploits*: one knob of a parent drawn from the
beam (the ``beam`` best correct configs; with 1, the incumbent) changes. Keep/revert:

- only a verdict that is valid AND correct, with a latency, is eligible;
- it becomes the incumbent on a strict ≥ 1% latency win, or within ±1% when its latency is
  measured and the incumbent's predicted, or (same kind) when its config is simpler
  (:func:`amkspec.lower.knobs.complexity`);
- every trial is a row of ``results.tsv``; a failing trial never stops the run.

**Rounds.** Trials come in rounds of ``round_size`` (0..R-1, R..2R-1, …). Every proposal of a
round is drawn from the trials of the rounds before it (the beam) with a generator seeded by the
seed and the trial's number, avoiding the schedules of every earlier trial and earlier proposal;
the round's lowered candidates are then judged together on an executor
(:mod:`amkspec.executors`), and decided and recorded in trial order. So the trials are a function
of the options alone (``round_size`` among them), never of the executor, its workers or the order in
which verdicts arrive: a serial run and a Ray run write the same ``results.tsv``, cache and incumbent.
Lowering, the cache and its program-hash guard, the keep/revert decision and every file stay on
the driver; workers only validate, run and compare (:mod:`amkspec.search.jobs`).

The state is written atomically after every trial, so an interrupted search resumed with the same
options (the lowering, runner and timeout included) reaches the same trials, row for row, as an
uninterrupted one. Verdicts come from a :class:`ScheduleCache` when the lowered program is
byte-identical, so no schedule is evaluated twice. A trial is written in the order ``state.json``,
``results.tsv``, ``cache.json``: a trial whose state was not saved left no cache entry behind, and a
resume rewrites the results and restores the cache entries of the saved trials, so a stop between
any two writes changes nothing.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from amkspec.executors import Executor, Failed
from amkspec.lower import knobs
from amkspec.search.cache import ScheduleCache
from amkspec.search.evaluate import Evaluator, Lowering, VmRunner, describe, plugin_name
from amkspec.search.files import atomic_write
from amkspec.search.jobs import EvaluatorSpec, Job, Outcome, forget, judge
from amkspec.search.space import default_document, mutate, probe, random_config
from amkspec.search.verdict import Verdict

WIN = 0.01
"""A candidate must be at least 1% faster to dethrone the incumbent (±1% is a tie)."""
REDRAWS = 16
"""Proposals drawn per trial to find a schedule not evaluated yet."""
ROUND_SIZE = 4
"""Trials per round (``--round``): proposed together from the trials of the rounds before."""
STATE, RESULTS, CACHE, WITNESSES = "state.json", "results.tsv", "cache.json", "witnesses"
COLUMNS = ("trial", "schedule_id", "program_sha256", "valid", "correct", "latency_us", "latency_kind",
           "status", "source", "knob", "cached", "reason")
SOURCES = ("default", "explore", "exploit", "probe")
"""Where a trial's config came from (see :meth:`Search.propose`)."""
STATUS_OF_FAILURE = {"rejected": "rejected", "lowering": "rejected", "timeout": "timeout", "fault": "crash",
                     "error": "crash", "vm-unavailable": "crash", "mismatch": "reverted"}


class SearchStateError(knobs.LoweringError):
    """A ``--resume`` whose saved state does not belong to these options, or cannot be read."""


def _share(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1):
        raise ValueError(f"{attribute.name} must be a number in [0, 1], not {value!r}")


@attrs.frozen
class SearchOptions:
    """What a search is: the model, target, VM and the proposal parameters (``budget`` may grow)."""

    model: str
    target: str
    budget: int
    seed: int = 0
    explore: float = attrs.field(default=0.35, validator=_share)
    beam: int = 1
    probe: float = attrs.field(default=0.25, validator=_share)
    vm: str = "reference"
    round_size: int = attrs.field(default=ROUND_SIZE, validator=attrs.validators.ge(1))

    def identity(self) -> dict[str, Any]:
        """These options less ``budget`` (:meth:`Search.identity` adds the lowering, runner, timeout)."""
        out = attrs.asdict(self)
        del out["budget"]
        return out


@attrs.frozen
class Trial:
    """One evaluated proposal and the keep/revert decision."""

    trial: int
    source: str
    knob: str
    config: dict[str, Any]
    verdict: Verdict
    status: str
    cached: bool
    reason: str
    seconds: float
    stale: bool = False
    """The cache held an entry for this schedule, but of another program or context."""

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        out["verdict"] = self.verdict.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Any, n: int) -> Trial:
        """Trial ``n`` read back from :meth:`to_dict`; every field's type is checked (ValueError)."""
        names = [a.name for a in attrs.fields(cls)]
        if not isinstance(d, dict) or set(d) != set(names):
            raise ValueError(f"trial {n} must be an object with exactly the keys {', '.join(names)}")
        number = d["trial"]
        checks = {"trial": isinstance(number, int) and not isinstance(number, bool) and number == n,
                  "source": d["source"] in SOURCES, "knob": isinstance(d["knob"], str),
                  "config": isinstance(d["config"], dict), "status": isinstance(d["status"], str),
                  "cached": isinstance(d["cached"], bool), "stale": isinstance(d["stale"], bool),
                  "reason": isinstance(d["reason"], str),
                  "seconds": isinstance(d["seconds"], int | float) and not isinstance(d["seconds"], bool)
                  and math.isfinite(d["seconds"]) and d["seconds"] >= 0}
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"trial {n}: bad {bad[0]} {d[bad[0]]!r:.60}")
        trial = cls(**{**d, "verdict": Verdict.from_dict(d["verdict"])})
        if knobs.schedule_id(trial.config) != trial.verdict.schedule_id:
            raise ValueError(f"trial {n}: its verdict is of {trial.verdict.schedule_id}, not of its config")
        return trial

    def row(self) -> list[str]:
        v = self.verdict
        cells = [self.trial, v.schedule_id, (v.program_sha256 or "")[:16], v.valid, v.correct,
                 "" if v.latency_us is None else v.latency_us, v.latency_kind or "", self.status, self.source,
                 self.knob, self.cached, self.reason]
        return [" ".join(str(c).split()) for c in cells]


def _rank(v: Verdict, config: dict[str, Any]) -> tuple[float, bool, tuple[int, tuple[int, ...]]]:
    parsed, _ = knobs.parse(config)
    simple = knobs.complexity(parsed) if parsed is not None else (1 << 30, ())
    latency = v.latency_us if v.latency_us is not None else float("inf")
    return latency, v.latency_kind != "measured-gpu", simple


def decide(v: Verdict, config: dict[str, Any], incumbent: Trial | None) -> tuple[str, str]:
    """``(status, reason)``: kept, tried, reverted, rejected, crash or timeout (see module doc)."""
    if not v.correct:
        return STATUS_OF_FAILURE.get(v.failure or "error", "crash"), v.rejected_reason or "; ".join(v.notes)
    if v.latency_us is None:
        return "tried", "correct, but without a latency to compare (see the verdict's notes)"
    if incumbent is None or incumbent.verdict.latency_us is None:
        return "kept", "first correct config with a latency"
    old = incumbent.verdict.latency_us
    gain = (old - v.latency_us) / old
    if gain >= WIN:
        return "kept", f"{100 * gain:.2f}% faster than trial {incumbent.trial}"
    if gain > -WIN:
        ours, theirs = _rank(v, config), _rank(incumbent.verdict, incumbent.config)
        if ours[1] < theirs[1]:
            return "kept", f"within 1% of trial {incumbent.trial} and measured (it was predicted)"
        if ours[1] == theirs[1] and ours[2] < theirs[2]:
            return "kept", f"within 1% of trial {incumbent.trial} and simpler"
        return "tried", f"within 1% of trial {incumbent.trial}, not simpler"
    return "tried", f"{-100 * gain:.2f}% slower than trial {incumbent.trial}"


@attrs.define
class SearchResult:
    """All trials, the incumbent and the default (trial 0); ``interrupted`` when Ctrl-C stopped it."""

    trials: list[Trial]
    incumbent: Trial | None
    out_dir: Path
    interrupted: bool = False

    @property
    def cache_hits(self) -> int:
        """Trials whose verdict came from the cache."""
        return sum(t.cached for t in self.trials)

    @property
    def stale(self) -> int:
        """Trials whose cache entry was there but stale (another program or context)."""
        return sum(t.stale for t in self.trials)

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for t in self.trials:
            counts[t.status] = counts.get(t.status, 0) + 1
        default = self.trials[0].verdict if self.trials else None
        best = self.incumbent.verdict if self.incumbent else None
        gain = None
        if default and best and default.latency_us and best.latency_us is not None:
            gain = round(100 * (default.latency_us - best.latency_us) / default.latency_us, 3)
        fastest = min((t for t in self.trials if t.verdict.latency_us is not None),
                      key=lambda t: t.verdict.latency_us or 0.0, default=None)
        return {"trials": len(self.trials), "statuses": counts, "interrupted": self.interrupted,
                "fastest_seen": None if fastest is None else {
                    "trial": fastest.trial, "latency_us": fastest.verdict.latency_us,
                    "status": fastest.status},
                "default": default.to_dict() if default else None,
                "incumbent": None if self.incumbent is None else {
                    "trial": self.incumbent.trial, "config": self.incumbent.config, "verdict": best.to_dict()
                    if best else None},
                "improvement_pct": gain, "cache_hits": self.cache_hits,
                "stale_cache_entries": self.stale, "out_dir": str(self.out_dir)}


ProgressHook = Callable[[Trial, "Trial | None"], None]


@attrs.define
class _Candidate:
    """A proposal of the current round on its way to becoming a trial."""

    n: int
    config: dict[str, Any]
    source: str
    knob: str
    seconds: float = 0.0
    verdict: Verdict | None = None
    cached: bool = False
    stale: bool = False
    job: Job | None = None
    same_as: int | None = None
    """The earlier trial of this round with the same schedule: this one takes its verdict."""


class Search:
    """One search run into ``out_dir`` (``state.json``, ``results.tsv``, ``cache.json``, ``witnesses/``)."""

    def __init__(self, options: SearchOptions, out_dir: str | Path, *, resume: bool = False,
                 lowering: Lowering | None = None, runner: VmRunner | None = None,
                 cache_path: str | Path | None = None, timeout_s: float = 10.0) -> None:
        self.options = options
        self.out = Path(out_dir)
        self.plugins = {"lowering": plugin_name(lowering), "runner": plugin_name(runner),
                        "timeout_s": timeout_s}
        self.evaluator = Evaluator(options.model, options.target, vm=options.vm, timeout_s=timeout_s,
                                   lowering=lowering, runner=runner, witness_dir=self.out / WITNESSES)
        spec = EvaluatorSpec(self.evaluator.model, self.evaluator.target, options.vm, timeout_s, runner,
                             self.evaluator.token)
        self.spec, self.spec_key = spec, spec.key()
        self.cache = ScheduleCache(cache_path if cache_path is not None else self.out / CACHE)
        self.trials: list[Trial] = []
        self.incumbent: Trial | None = None
        self.seen: set[str] = set()
        if resume:
            self._resume()
        elif (self.out / STATE).exists():
            raise SearchStateError(f"{self.out / STATE} exists: pass --resume to continue it, or use "
                                   "another --out directory")

    def identity(self) -> dict[str, Any]:
        """Every option a resumed search must share with the saved one: :meth:`SearchOptions.identity`,
        the lowering and the runner (``module:qualname``, None for the built-in ones) and the timeout."""
        return {**self.options.identity(), **self.plugins}

    def _resume(self) -> None:
        path = self.out / STATE
        if not path.exists():
            raise SearchStateError(f"{path}: nothing to resume (no saved search there); leave out --resume "
                                   "to start one")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not (isinstance(doc, dict) and set(doc) == {"options", "trials"}
                    and isinstance(doc["options"], dict) and isinstance(doc["trials"], list)):
                raise ValueError("expected an object with an object 'options' and a list 'trials'")
            saved = doc["options"]
            trials = [Trial.from_dict(t, n) for n, t in enumerate(doc["trials"])]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise SearchStateError(f"{path}: cannot resume: {describe(exc)}") from None
        ours = self.identity()
        if saved != ours:
            changed = [f"{k} {saved.get(k)!r:.80} (now {v!r:.80})"
                       for k, v in ours.items() if saved.get(k) != v]
            what = "; ".join(changed) or f"unknown ones {sorted(set(saved) - set(ours))!r:.200}"
            raise SearchStateError(f"{path}: saved with other options: {what}; resume with the same ones")
        for t in trials:
            status, reason = decide(t.verdict, t.config, self.incumbent)
            if (t.status, t.reason) != (status, reason):
                raise SearchStateError(f"{path}: cannot resume: trial {t.trial} is {t.status!r}, but its "
                                       f"verdict makes it {status!r}")
            self._record(t)
        self._write_results()
        self.cache.restore((t.verdict for t in self.trials), self.evaluator.context)

    def _record(self, t: Trial) -> None:
        self.trials.append(t)
        self.seen.add(t.verdict.schedule_id)
        if t.status == "kept":
            self.incumbent = t

    def round_start(self, n: int) -> int:
        """The first trial of trial ``n``'s round (rounds are ``round_size`` trials: 0..R-1, R..2R-1, …)."""
        return n - n % self.options.round_size

    def beam(self, history: list[Trial] | None = None) -> list[Trial]:
        """The ``beam`` best correct trials of ``history`` (default: every trial so far) by latency,
        then measured over predicted, then simplicity; with ``beam`` 1, the incumbent."""
        history = self.trials if history is None else history
        correct = [t for t in history if t.verdict.correct and t.verdict.latency_us is not None]
        correct.sort(key=lambda t: (_rank(t.verdict, t.config), t.trial))
        best = correct[: max(1, self.options.beam)]
        incumbent = next((t for t in reversed(history) if t.status == "kept"), None)
        return best if self.options.beam > 1 or incumbent is None else [incumbent]

    def propose(self, n: int, seen: set[str] | None = None) -> tuple[dict[str, Any], str, str]:
        """``(config, source, knob)`` of trial ``n``: a function of the seed, ``n`` and the trials
        before its round, avoiding the schedules in ``seen`` (default: those of every trial so far;
        a round adds its own earlier proposals)."""
        if n == 0:
            return default_document(), "default", "-"
        seen = self.seen if seen is None else seen
        rng = random.Random(f"amkspec-search/{self.options.seed}/{n}")
        target = self.evaluator.target
        parents = self.beam(self.trials[: self.round_start(n)])
        proposal: tuple[dict[str, Any], str, str] = default_document(), "default", "-"
        for _ in range(REDRAWS):
            if not parents or rng.random() < self.options.explore:
                if rng.random() < self.options.probe:
                    base = parents[0].config if parents else default_document()
                    doc, knob = probe(rng, base, target)
                    proposal = doc, "probe", knob
                else:
                    proposal = random_config(rng, target), "explore", "*"
            else:
                doc, knob = mutate(rng, rng.choice(parents).config, target)
                proposal = doc, "exploit", knob
            if knobs.schedule_id(proposal[0]) not in seen:
                break
        return proposal

    def _candidate(self, n: int, round_ids: dict[str, int]) -> _Candidate:
        """Propose trial ``n``, lower it and look it up in the cache (all on the driver)."""
        started = time.perf_counter()
        config, source, knob = self.propose(n, self.seen | set(round_ids))
        c = _Candidate(n, config, source, knob)
        sid = knobs.schedule_id(config)
        if sid in round_ids:
            c.same_as = round_ids[sid]
            return c
        round_ids[sid] = n
        ev = self.evaluator
        try:
            prepared = ev.prepare(config)
            if isinstance(prepared, Verdict):
                c.verdict = prepared
            else:
                stale = self.cache.stale
                c.verdict = self.cache.lookup(prepared.schedule_id, prepared.sha256, ev.context)
                c.cached, c.stale = c.verdict is not None, self.cache.stale > stale
                if c.verdict is None:
                    c.job = Job(self.spec_key, self.spec, prepared)
        except Exception:  # noqa: BLE001 - evaluate()'s boundary: one failure never stops the run
            c.verdict, c.job = ev.evaluate(config), None
        c.seconds = time.perf_counter() - started
        return c

    def _round(self, executor: Executor, on_trial: ProgressHook | None) -> None:
        """Propose the rest of the current round, judge its lowered candidates on ``executor``, and
        record them in trial order as their verdicts arrive."""
        first, opts = len(self.trials), self.options
        start = self.round_start(first)
        round_ids: dict[str, int] = {}
        for t in self.trials[start:]:
            round_ids.setdefault(t.verdict.schedule_id, t.trial)
        end = min(start + opts.round_size, opts.budget)
        pending = [self._candidate(n, round_ids) for n in range(first, end)]
        by_n = {c.n: c for c in pending}
        jobs = [c for c in pending if c.job is not None]
        self._record_ready(by_n, on_trial)
        for i, outcome in executor.imap(judge, [c.job for c in jobs]):
            c = jobs[i]
            c.verdict = self._verdict_of(c, outcome)
            c.seconds += outcome.seconds if isinstance(outcome, Outcome) else 0.0
            self._record_ready(by_n, on_trial)
        self._record_ready(by_n, on_trial)

    def _verdict_of(self, c: _Candidate, outcome: Outcome | Failed) -> Verdict:
        assert c.job is not None
        ev, prepared = self.evaluator, c.job.prepared
        if isinstance(outcome, Failed):
            return ev.error(prepared.schedule_id, outcome.reason, "the evaluation did not complete",
                            program_sha256=prepared.sha256)
        return ev.attach(outcome.verdict, outcome.rejection)

    def _record_ready(self, by_n: dict[int, _Candidate], on_trial: ProgressHook | None) -> None:
        """Record the candidates whose turn it is and whose verdict is known."""
        while (c := by_n.get(len(self.trials))) is not None:
            if c.same_as is not None:
                c.verdict, c.cached = self.trials[c.same_as].verdict, True
            if c.verdict is None:
                return
            del by_n[c.n]
            status, reason = decide(c.verdict, c.config, self.incumbent)
            trial = Trial(c.n, c.source, c.knob, c.config, c.verdict, status, c.cached, reason,
                          round(c.seconds, 4), stale=c.stale)
            self._record(trial)
            self.save()
            if not c.cached:  # after the state: a stop before this line leaves no entry of an unsaved trial
                self.cache.store(c.verdict, self.evaluator.context)
            if on_trial is not None:
                on_trial(trial, self.incumbent)

    def save(self) -> None:
        """Write ``state.json``, then ``results.tsv``, atomically."""
        state = {"options": self.identity(), "trials": [t.to_dict() for t in self.trials]}
        atomic_write(self.out / STATE, json.dumps(state, indent=1, allow_nan=False) + "\n")
        self._write_results()

    def _write_results(self) -> None:
        lines = ["\t".join(COLUMNS)] + ["\t".join(t.row()) for t in self.trials]
        atomic_write(self.out / RESULTS, "\n".join(lines) + "\n")

    def run(self, on_trial: ProgressHook | None = None, executor: Executor | None = None) -> SearchResult:
        """Run until ``budget`` trials exist, judging each round's candidates on ``executor`` (default:
        serial, in this process); Ctrl-C cancels the jobs in flight and stops cleanly between atomic
        writes."""
        interrupted = False
        try:
            if not (self.out / STATE).exists():
                self.save()  # a fresh run can be resumed from its first write on
            while len(self.trials) < self.options.budget:
                self._round(executor or Executor(), on_trial)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            forget()
        return SearchResult(self.trials, self.incumbent, self.out, interrupted)


def search(model: str, target: str, budget: int, out_dir: str | Path, *, seed: int = 0,
           explore: float = 0.35, beam: int = 1, probe: float = 0.25, vm: str = "reference",
           round_size: int = ROUND_SIZE, resume: bool = False, lowering: Lowering | None = None,
           runner: VmRunner | None = None, on_trial: ProgressHook | None = None, timeout_s: float = 10.0,
           executor: Executor | None = None) -> SearchResult:
    """Run a search (see :class:`Search`) and return its result."""
    options = SearchOptions(model, target, budget, seed, explore, beam, probe, vm, round_size)
    return Search(options, out_dir, resume=resume, lowering=lowering, runner=runner,
                  timeout_s=timeout_s).run(on_trial, executor)
