"""The exhaustive check: ``validate()`` against the model checker on every class of a bounded
domain, sharded, checkpointed, on any executor (proofs guide, "Exhaustive check"; "Running at scale").

For each task count ``n`` from 1 to ``bound.tasks``, the raw task lists of ``n`` tasks
(:meth:`Domain.raw_count <amkspec.evidence.exhaustive.domain.Domain.raw_count>`) are cut into
*shards* of ``shard_size`` consecutive ranks. A shard is one job (:func:`check_shard`): it checks the
representatives of its ranks with :func:`~amkspec.evidence.exhaustive.agreement.compare`, stops at the
deadline of a ``minutes`` budget, and shrinks each disagreement to a minimal one (:func:`minimize`).

With an output directory the run is checkpointed: ``run.json`` holds the bound, the shard size and a
fingerprint of the code under check (:func:`code_fingerprint`), and ``shards.jsonl`` one line per
checked piece of a shard (its ranks ``[begin, reached)``, the classes checked, its disagreements),
appended and synced as each job ends. A rerun with the same bound continues every shard from where
it stopped and skips the finished ones; a rerun with another bound, shard size or code is refused
(:class:`CheckpointError`). Each disagreement is written as ``disagreements/<n>t-<shard>-<k>.json``:
the minimal program, loadable by every amkspec command, with the reason in its ``meta``.

The counts of a complete task count do not depend on the executor, the workers or the shard
size; a partial one (the time ran out) depends on which shards finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from amkspec.evidence.exhaustive import agreement
from amkspec.evidence.exhaustive.domain import Bound, Domain, Program, build
from amkspec.executors import Executor, Failed
from amkspec.footprint import Memo
from amkspec.ir import dumps
from amkspec.ir.atomic import write_atomic
from amkspec.ir.errors import AmkspecError

SHARD_SIZE = 5_000
"""Raw task lists per shard: a few seconds of work on one core for the main domain, and 11 shards
of its 2-task level, so that 2 workers share it evenly (the classes crowd into the low ranks)."""
FORMAT, VERSION = "amkspec-exhaustive", 1
RUN, SHARDS, DISAGREEMENTS = "run.json", "shards.jsonl", "disagreements"


class CheckpointError(AmkspecError):
    """An output directory whose checkpoint belongs to another run (bound, shard size, code) or is damaged."""


@attrs.frozen
class Shard:
    """Ranks ``[start, stop)`` of the raw task lists of ``tasks`` tasks; ``index`` counts from 0."""

    tasks: int
    index: int
    start: int
    stop: int


@attrs.frozen
class ShardJob:
    """Check ``shard`` from rank ``begin`` on, until ``deadline`` (``time.time()``; None: no limit)."""

    bound: Bound
    shard: Shard
    begin: int
    deadline: float | None = None


@attrs.frozen
class Disagreement:
    """A program on which the two disagree (found at ``rank``), and the minimal one :func:`minimize`
    shrank it to."""

    rank: int
    """The rank of the task list it was found at."""
    reason: str
    """Why the two disagree on ``program``."""
    program: Program
    """The representative found."""
    minimal: Program
    """What :func:`minimize` shrank it to."""
    minimal_reason: str
    """Why the two disagree on ``minimal``."""


@attrs.frozen
class ShardResult:
    """What a job checked: ranks ``[begin, reached)``, the classes among them, the disagreements."""

    shard: Shard
    begin: int
    reached: int
    classes: int
    disagreements: tuple[Disagreement, ...]
    seconds: float


_tools: dict[Bound, tuple[Domain, Memo]] = {}
"""This process's domain and footprint memo, by bound (every program of a domain has the same
buffer shapes and dtypes by id, so one memo serves them all)."""


def _domain(bound: Bound) -> tuple[Domain, Memo]:
    if bound not in _tools:
        _tools.clear()
        _tools[bound] = (Domain(bound), Memo())
    return _tools[bound]


def check_shard(job: ShardJob) -> ShardResult:
    """Check one shard (the executors' job function)."""
    started = time.perf_counter()
    domain, memo = _domain(job.bound)
    shard, reached, classes, found = job.shard, job.begin, 0, []
    for q in domain.queues(shard.tasks, job.begin, shard.stop):
        if job.deadline is not None and time.time() > job.deadline:
            break
        for p in domain.representatives(q):
            classes += 1
            why = agreement.compare(build(p), memo)
            if why is not None:
                minimal = minimize(p, memo)
                again = agreement.compare(build(minimal), memo) or why
                found.append(Disagreement(reached, why, p, minimal, again))
        reached += 1
    return ShardResult(shard, job.begin, reached, classes, tuple(found), time.perf_counter() - started)


def minimize(p: Program, memo: Memo | None = None) -> Program:
    """A smallest program :func:`_smaller` reaches from ``p`` on which the two still disagree:
    tasks dropped, thresholds lowered, sources and tiles made plain, inits, pages and kinds cleared."""
    current, shrinking = p, True
    while shrinking:
        shrinking = False
        for candidate in _smaller(current):
            if agreement.compare(build(candidate), memo) is not None:
                current, shrinking = candidate, True
                break
    return current


def _smaller(p: Program) -> Iterator[Program]:
    """Each program one step simpler than ``p`` (every step lowers a well-founded measure)."""
    kinds, inits, paged, tasks = p
    if len(tasks) > 1:
        for i in range(len(tasks)):
            yield kinds, inits, paged, tasks[:i] + tasks[i + 1:]
    for i, (src, dst, col, oc, ths, sm) in enumerate(tasks):
        variants = [(src, dst, col, oc, (*ths[:c], t - 1, *ths[c + 1:]), sm) for c, t in enumerate(ths) if t]
        variants += [(-1, dst, col, oc, ths, sm)] if src >= 0 else []
        variants += [(src, dst, -1, oc, ths, sm)] if col >= 0 else []
        for v in variants:
            yield kinds, inits, paged, (*tasks[:i], v, *tasks[i + 1:])
    if paged:
        yield kinds, inits, False, tasks
    for c, init in enumerate(inits):
        if init:
            yield kinds, (*inits[:c], 0, *inits[c + 1:]), paged, tasks
    for b, kind in enumerate(kinds):
        if kind:
            yield (*kinds[:b], 0, *kinds[b + 1:]), inits, paged, tasks


def code_fingerprint() -> str:
    """SHA-256 of the sources of :mod:`amkspec.ir`, :mod:`amkspec.footprint`, :mod:`amkspec.proofs`
    and :mod:`amkspec.evidence` (the code under check, the model checker and this comparison)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    floors = ("ir", "footprint", "proofs", "evidence")
    sources = [path for floor in floors for path in root.glob(f"{floor}/**/*.py")]
    for path in sorted(sources):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@attrs.define
class Level:
    """One task count: the domain's programs and classes, and how many classes were checked."""

    tasks: int
    programs: int
    classes: int
    shards: int
    checked: int = 0
    shards_done: int = 0

    @property
    def complete(self) -> bool:
        return self.shards_done == self.shards


@attrs.define
class Report:
    """Where a run got: counts per task count, disagreements, this run's throughput."""

    bound: Bound
    levels: list[Level]
    executor: str = "serial"
    disagreements: list[dict[str, Any]] = attrs.Factory(list)
    failed: list[str] = attrs.Factory(list)
    """Why each job that gave no result failed (its shard is checked again by a rerun)."""
    checked_before: int = 0
    """Classes a checkpoint already held when this run started."""
    checked_now: int = 0
    seconds: float = 0.0
    job_seconds: float = 0.0
    """The seconds the jobs of this run took, added up (over ``seconds``: the workers kept busy)."""
    interrupted: bool = False

    @property
    def complete(self) -> int:
        """The largest task count whose every class (and every smaller count's) was checked."""
        n = 0
        for level in self.levels:
            if not level.complete:
                break
            n = level.tasks
        return n

    @property
    def rate(self) -> float:
        """Classes checked per second by this run."""
        return self.checked_now / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        """The bound reached, the rate and the disagreements, on one line."""
        partial = next((lv for lv in self.levels if not lv.complete and lv.checked), None)
        frac = "" if partial is None else (
            f", and {partial.checked:,} of the {partial.classes:,} classes of {partial.tasks} tasks "
            f"({100 * partial.checked / partial.classes:.1f}%)")
        before = f" (+{self.checked_before:,} from the checkpoint)" if self.checked_before else ""
        failed = f"; {len(self.failed)} jobs failed (a rerun retries them)" if self.failed else ""
        return (f"complete up to {self.complete} task(s){frac}; classes checked: {self.checked_now:,}"
                f"{before} in {self.seconds:.1f} s ({self.rate:,.0f}/s, {self.executor}); "
                f"disagreements: {len(self.disagreements)}{failed}")

    def table(self) -> list[str]:
        """A Markdown table: programs, classes and classes checked per task count."""
        rows = ["| tasks | programs | symmetry classes | checked |", "|---:|---:|---:|---|"]
        for lv in self.levels:
            checked = "all" if lv.complete else (
                "none" if not lv.checked else f"{lv.checked:,} ({100 * lv.checked / lv.classes:.1f}%)")
            rows.append(f"| {lv.tasks} | {lv.programs:,} | {lv.classes:,} | {checked} |")
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {"bound": attrs.asdict(self.bound), "executor": self.executor, "complete": self.complete,
                "levels": [{**attrs.asdict(lv), "complete": lv.complete} for lv in self.levels],
                "checked_before": self.checked_before, "checked_now": self.checked_now,
                "seconds": round(self.seconds, 3), "job_seconds": round(self.job_seconds, 3),
                "rate": round(self.rate, 1),
                "disagreements": [{k: v for k, v in d.items() if k != "program"} for d in self.disagreements],
                "failed": self.failed, "interrupted": self.interrupted}


class Checkpoint:
    """``run.json`` and ``shards.jsonl`` of an output directory (see the module docstring)."""

    def __init__(self, out: Path, bound: Bound, shard_size: int) -> None:
        self.out = out
        self.header = {"format": FORMAT, "version": VERSION, "bound": attrs.asdict(bound),
                       "shard_size": shard_size, "code": code_fingerprint()}
        run = out / RUN
        if run.exists():
            try:
                saved = json.loads(run.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CheckpointError(f"{run}: cannot read the checkpoint: {exc}") from None
            if saved != self.header:
                saved = saved if isinstance(saved, dict) else {}
                changed = [k for k in self.header if saved.get(k) != self.header[k]]
                what = ", ".join("the code under check" if k == "code" else k for k in changed)
                raise CheckpointError(f"{run}: a checkpoint of another run (other {what}); use another "
                                      "output directory")
        else:
            out.mkdir(parents=True, exist_ok=True)
            write_atomic(run, json.dumps(self.header, indent=1) + "\n")

    def lines(self) -> list[dict[str, Any]]:
        """The recorded pieces; a torn last line (a crash while appending) is cut off the file."""
        path = self.out / SHARDS
        if not path.exists():
            return []
        raw = path.read_bytes()
        out, kept = [], 0
        for line in raw.splitlines(keepends=True):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("torn")
                out.append(json.loads(line))
            except ValueError:
                if kept + len(line) < len(raw):
                    raise CheckpointError(f"{path}: line {len(out) + 1} is damaged") from None
                with path.open("r+b") as f:
                    f.truncate(kept)
                break
            kept += len(line)
        return out

    def append(self, line: dict[str, Any]) -> None:
        with (self.out / SHARDS).open("a", encoding="utf-8") as f:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())


def shards(bound: Bound, shard_size: int = SHARD_SIZE) -> list[Shard]:
    """Every shard of the domain, task count by task count."""
    domain = Domain(bound)
    out = []
    for n in range(1, bound.tasks + 1):
        raw = domain.raw_count(n)
        starts = range(0, raw, shard_size)
        out += [Shard(n, k, start, min(start + shard_size, raw)) for k, start in enumerate(starts)]
    return out


ShardHook = Callable[[ShardResult, Report], None]


def check(bound: Bound, out: str | Path | None = None, *, executor: Executor | None = None,
          minutes: float | None = None, shard_size: int = SHARD_SIZE, on_shard: ShardHook | None = None
          ) -> Report:
    """Check every class of ``bound`` (task counts 1, 2, …) on ``executor`` (default: serial) until
    done or ``minutes`` have passed; checkpointed into ``out`` when given. Ctrl-C cancels the jobs in
    flight and returns the report so far (``interrupted``)."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, not {shard_size}")
    executor = executor or Executor()
    domain, all_shards = Domain(bound), shards(bound, shard_size)
    levels = {n: Level(n, *domain.size(n), sum(s.tasks == n for s in all_shards))
              for n in range(1, bound.tasks + 1)}
    report = Report(bound, list(levels.values()), executor.describe())
    done: dict[tuple[int, int], int] = {}
    checkpoint = None
    if out is not None:
        checkpoint = Checkpoint(Path(out), bound, shard_size)
        for line in checkpoint.lines():
            _restore(line, all_shards, done, levels, report, checkpoint.out / SHARDS)
    started = time.monotonic()
    deadline = None if minutes is None else time.time() + 60 * minutes

    submitted: list[ShardJob] = []

    def jobs() -> Iterator[ShardJob]:
        """The unfinished shards, drawn as workers free up, until the deadline."""
        for s in all_shards:
            begin = done.get((s.tasks, s.index), s.start)
            if deadline is not None and time.time() >= deadline:
                return
            if begin < s.stop:
                submitted.append(ShardJob(bound, s, begin, deadline))
                yield submitted[-1]

    try:
        for i, result in executor.imap(check_shard, jobs()):
            if isinstance(result, Failed):
                report.failed.append(f"{submitted[i].shard}: {result.reason}")
                continue
            _record(result, levels[result.shard.tasks], report, checkpoint)
            report.seconds = time.monotonic() - started
            if on_shard is not None:
                on_shard(result, report)
    except KeyboardInterrupt:
        report.interrupted = True
    report.seconds = time.monotonic() - started
    return report


def _restore(line: Any, all_shards: list[Shard], done: dict[tuple[int, int], int], levels: dict[int, Level],
             report: Report, path: Path) -> None:
    """Count one checkpoint line in (``done``: each shard's next rank); refuse one that does not fit."""
    try:
        keys = ("tasks", "shard", "begin", "reached", "classes")
        n, k, begin, reached, classes = (line[key] for key in keys)
        shard = next(s for s in all_shards if (s.tasks, s.index) == (n, k))
        if begin != done.get((n, k), shard.start) or not begin <= reached <= shard.stop or classes < 0:
            raise ValueError("out of order")
        files = list(line["disagreements"])
    except (TypeError, KeyError, StopIteration, ValueError):
        shown = json.dumps(line)[:100]
        raise CheckpointError(f"{path}: a line that does not fit this run: {shown}") from None
    done[(n, k)] = reached
    level = levels[n]
    level.checked += classes
    level.shards_done += reached == shard.stop
    report.checked_before += classes
    report.disagreements += [{"tasks": n, "shard": k, "file": f, "reason": _reason_in(path.parent / f)}
                             for f in files]


def _reason_in(witness: Path) -> str:
    """The reason a disagreement file of an earlier run records."""
    try:
        return str(json.loads(witness.read_text(encoding="utf-8"))["meta"]["exhaustive"]["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"(found by an earlier run; {witness.name} is unreadable)"


def _record(result: ShardResult, level: Level, report: Report, checkpoint: Checkpoint | None) -> None:
    """Count a finished job in, write its disagreements and its checkpoint line."""
    s = result.shard
    if result.reached == result.begin:
        return  # the deadline came first: nothing to count or record
    found = []
    for j, d in enumerate(result.disagreements):
        prog = build(d.minimal)
        prog.meta = {"exhaustive": {"reason": d.minimal_reason, "bound": attrs.asdict(report.bound),
                                    "found_with_tasks": len(d.program[3])}}
        text = dumps(prog)
        name = None
        if checkpoint is not None:
            nth = sum(e.rank == d.rank for e in result.disagreements[:j])
            name = f"{DISAGREEMENTS}/{s.tasks}t-{d.rank}-{nth}.json"
            path = checkpoint.out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text + "\n")
        found.append({"tasks": s.tasks, "shard": s.index, "file": name, "reason": d.minimal_reason,
                      "program": text})
    if checkpoint is not None:
        checkpoint.append({"tasks": s.tasks, "shard": s.index, "begin": result.begin,
                           "reached": result.reached, "classes": result.classes,
                           "disagreements": [f["file"] for f in found], "seconds": round(result.seconds, 3)})
    level.checked += result.classes
    level.shards_done += result.reached == s.stop
    report.checked_now += result.classes
    report.job_seconds += result.seconds
    report.disagreements += found
