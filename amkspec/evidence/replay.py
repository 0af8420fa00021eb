"""Replay checker: re-execute a witness trace on an abstract counter machine (no z3, no torch).

The machine follows spec §2: a task may start only when each of its waits
holds (counter value ≥ threshold, counters start at their ``init``) and, when it has an SM,
only after the task before it in that SM's queue (task-list order) has ended;
each task starts once and ends once, after it started; an end increments the
task's out_counter by one and completes its writes (the shadow state).
:func:`check_witness` replays the JSON form of a witness (see
:mod:`amkspec.smt.witness`) and confirms that it is a legal execution that
exhibits the violation it claims.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable
from typing import Any

import attrs

from amkspec.footprint import Footprint, Memo, task_footprint, uncovered
from amkspec.ir import MegakernelProgram
from amkspec.ir.trace import Event, trace_from_json


class ReplayError(ValueError):
    """The trace is not a legal execution, or does not show what it claims."""


def initial_counters(prog: MegakernelProgram) -> Tally[int]:
    """Counter id → its ``init`` (spec §1.5; the first record of an id wins, non-int inits count 0)."""
    values: Tally[int] = Tally()
    seen: set[Any] = set()
    for c in prog.counters if isinstance(prog.counters, list) else []:
        cid, init = getattr(c, "id", None), getattr(c, "init", 0)
        if type(cid) is int and cid not in seen:
            seen.add(cid)
            values[cid] = init if type(init) is int else 0
    return values


@attrs.define
class Machine:
    """Counter values, task states and completed writes after a trace prefix."""

    prog: MegakernelProgram
    tasks: dict[int, Any] = attrs.field(init=False)
    queue_prev: dict[int, int] = attrs.field(init=False)
    counters: Tally[int] = attrs.Factory(Tally)
    started: dict[int, int] = attrs.Factory(dict)
    """task id → position of its start event."""
    ended: dict[int, int] = attrs.Factory(dict)
    """task id → position of its end event (its writes are complete from here on)."""

    def __attrs_post_init__(self) -> None:
        self.counters = initial_counters(self.prog)
        self.tasks = {}
        for t in self.prog.tasks:
            if t.id in self.tasks:
                raise ReplayError(f"two tasks have id {t.id}")
            self.tasks[t.id] = t
        last: dict[int, int] = {}
        self.queue_prev = {}
        for t in self.prog.tasks:
            if type(t.sm) is int:
                if t.sm in last:
                    self.queue_prev[t.id] = last[t.sm]
                last[t.sm] = t.id

    def unmet(self, tid: int) -> list[tuple[int, int, int]]:
        """The waits of ``tid`` that do not hold now: (counter, threshold, value)."""
        return [
            (w.counter, w.threshold, self.counters[w.counter])
            for w in self.tasks[tid].waits
            if self.counters[w.counter] < w.threshold
        ]

    def queue_blocker(self, tid: int) -> int | None:
        prev = self.queue_prev.get(tid)
        return prev if prev is not None and prev not in self.ended else None

    def step(self, n: int, ev: Event) -> None:
        if ev.task not in self.tasks:
            raise ReplayError(f"event {n}: no task {ev.task}")
        if ev.kind == "start":
            if ev.task in self.started:
                raise ReplayError(f"event {n}: task {ev.task} starts twice")
            if self.unmet(ev.task):
                c, t, v = self.unmet(ev.task)[0]
                raise ReplayError(f"event {n}: task {ev.task} starts while counter {c} = {v} < {t}")
            if self.queue_blocker(ev.task) is not None:
                raise ReplayError(f"event {n}: task {ev.task} starts before its SM queue predecessor ended")
            self.started[ev.task] = n
        else:
            if ev.task not in self.started or ev.task in self.ended:
                raise ReplayError(f"event {n}: task {ev.task} ends without a matching start")
            self.ended[ev.task] = n
            self.counters[self.tasks[ev.task].out_counter] += 1


def replay(prog: MegakernelProgram, events: Iterable[Event]) -> Machine:
    """Execute ``events``; raises :class:`ReplayError` at the first illegal one (spec §2)."""
    m = Machine(prog)
    for n, ev in enumerate(events):
        m.step(n, ev)
    return m


def _before(m: Machine, first: dict[int, int], a: int, second: dict[int, int], b: int) -> bool:
    """Event ``first[a]`` happened and precedes ``second[b]`` (or ``second[b]`` never happened)."""
    return a in first and (b not in second or first[a] < second[b])


def _check_counters(m: Machine, events: list[dict[str, Any]]) -> None:
    values = initial_counters(m.prog)
    for n, item in enumerate(events):
        task = m.tasks[item["task"]]
        if item["event"] == "end":
            values[task.out_counter] += 1
        for c, v in item.get("counters", {}).items():
            if values[int(c)] != v:
                raise ReplayError(f"event {n}: claims counter {c} = {v}, replay has {values[int(c)]}")


def _footprints(m: Machine) -> dict[int, Footprint]:
    """Task id → footprint (:mod:`amkspec.footprint`)."""
    buffers: dict[int, Any] = {}
    for b in m.prog.buffers:
        buffers.setdefault(b.id, b)
    memo = Memo()
    return {tid: task_footprint(t, buffers, memo) for tid, t in m.tasks.items()}


def _task(m: Machine, roles: dict[str, Any], role: str) -> int:
    tid = roles[role]
    if type(tid) is not int or tid not in m.tasks:
        raise ReplayError(f"role {role!r} names no task")
    return tid


def _read_race(m: Machine, roles: dict[str, Any]) -> None:
    r, w, b = _task(m, roles, "reader"), _task(m, roles, "writer"), roles["buffer"]
    fps = _footprints(m)
    if r == w or not fps[r].read(b).overlaps(fps[w].write(b)):
        raise ReplayError("the reader/writer roles do not match the program")
    if r not in m.started or _before(m, m.ended, w, m.started, r):
        raise ReplayError(f"task {r} does not start before writer {w} ends")


def _unwritten(m: Machine, roles: dict[str, Any]) -> None:
    r, b = _task(m, roles, "reader"), roles["buffer"]
    fps = _footprints(m)
    buf = next((x for x in m.prog.buffers if x.id == b), None)
    others = [fp.write(b) for tid, fp in fps.items() if tid != r]
    read = fps[r].read(b)
    if buf is None or read.is_empty or not uncovered(read, others, tuple(buf.shape)):
        raise ReplayError(f"task {r} reads no element of buffer {b} that no other task writes")
    if r not in m.started:
        raise ReplayError(f"task {r} never starts")


def _write_race(m: Machine, roles: dict[str, Any]) -> None:
    a, b = _task(m, roles, "first"), _task(m, roles, "second")
    fps = _footprints(m)
    if a == b or not fps[a].write(roles["buffer"]).overlaps(fps[b].write(roles["buffer"])):
        raise ReplayError("the writer roles do not match the program")
    if not (
        a in m.started
        and b in m.started
        and not _before(m, m.ended, a, m.started, b)
        and not _before(m, m.ended, b, m.started, a)
    ):
        raise ReplayError(f"writers {a} and {b} never run at the same time")


def _clobber(m: Machine, roles: dict[str, Any]) -> None:
    u1, u2, v = _task(m, roles, "writer"), _task(m, roles, "reader"), _task(m, roles, "clobberer")
    x, y = roles["buffer"], roles["other"]
    pages = m.prog.pages.buffer_to_page if m.prog.pages else {}
    if (
        x not in m.tasks[u1].outputs
        or x not in m.tasks[u2].inputs
        or y not in m.tasks[v].outputs
        or pages.get(x) is None
        or pages.get(x) != pages.get(y)
        or x == y
    ):
        raise ReplayError("the page roles do not match the program")
    if not (
        u1 in m.ended
        and v in m.started
        and u2 in m.started
        and _before(m, m.ended, u1, m.ended, v)
        and _before(m, m.started, v, m.ended, u2)
    ):
        raise ReplayError(f"{v}'s write does not fall inside the live range of buffer {x}")


def _deadlock(m: Machine, blocked: list[dict[str, Any]]) -> None:
    if any(t not in m.ended for t in m.started):
        raise ReplayError("a task is still running, the state is not stuck")
    unstarted = [tid for tid in m.tasks if tid not in m.started]
    if not unstarted:
        raise ReplayError("every task finished, nothing is stuck")
    claimed = {b["task"]: b for b in blocked}
    if len(claimed) != len(blocked):
        raise ReplayError("the blocked list names a task twice")
    if sorted(claimed) != sorted(unstarted):
        raise ReplayError("the blocked tasks are not exactly the unstarted ones")
    for tid in unstarted:
        unmet = [list(x) for x in m.unmet(tid)]
        prev = m.queue_blocker(tid)
        if not unmet and prev is None:
            raise ReplayError(f"task {tid} could still start")
        got = claimed[tid]
        if [[x["counter"], x["threshold"], x["value"]] for x in got["waits"]] != unmet or got[
            "queue_predecessor"
        ] != prev:
            raise ReplayError(f"task {tid}: the claimed blocking reasons are wrong")


def _cycle(m: Machine, edges: list[dict[str, Any]]) -> None:
    if not edges or any(edges[n]["to"] != edges[(n + 1) % len(edges)]["from"] for n in range(len(edges))):
        raise ReplayError("the edges do not form a cycle")
    for e in edges:
        a, b = m.tasks.get(e["from"]), m.tasks.get(e["to"])
        if a is None or b is None:
            raise ReplayError("a cycle edge names a missing task")
        kind, _, value = str(e["via"]).partition(" ")
        if kind == "counter":
            ok = a.out_counter == int(value) and any(w.counter == a.out_counter for w in b.waits)
        else:
            ok = m.queue_prev.get(b.id) == a.id
        if not ok:
            raise ReplayError(f"no edge {a.id} -> {b.id} via {e['via']}")


def check_witness(prog: MegakernelProgram, witness: dict[str, Any]) -> None:
    """Replay a witness (its JSON form); raises :class:`ReplayError` unless it is legal and shows its kind.

    Spec §2, §3.
    """
    try:
        events = witness["events"]
        m = replay(prog, trace_from_json(events))
        _check_counters(m, events)
        kind = witness["kind"]
        if kind in ("read-race", "kv-race"):
            _read_race(m, witness["roles"])
        elif kind == "unwritten-read":
            _unwritten(m, witness["roles"])
        elif kind == "write-race":
            _write_race(m, witness["roles"])
        elif kind == "page-clobber":
            _clobber(m, witness["roles"])
        elif kind == "deadlock":
            _deadlock(m, witness["blocked"])
        elif kind == "cycle":
            _cycle(m, witness["cycle"])
        else:
            raise ReplayError(f"unknown witness kind {kind!r}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        if isinstance(exc, ReplayError):
            raise
        raise ReplayError(f"malformed witness: {type(exc).__name__}: {exc}") from exc
