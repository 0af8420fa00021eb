"""What a witness timeline shows, decided without drawing anything (spec §2.2, §3).

:func:`timeline_scene` reads a witness in its documented JSON form (see
:mod:`amkspec.smt.witness`; unknown fields are ignored) and decides the lanes
(one per SM, one per unassigned task), the bars (a task from its ``start`` to its
``end`` event, in witness order), the counters' values step by step, the blocked
tasks of a stuck state and the edges of a cycle. When a witness involves more
than :data:`MAX_TASKS` tasks it keeps the witness's *neighbourhood*: the tasks
it names and their direct predecessors, and says so in :attr:`TimelineScene.note`.

Element ids (``gid``) of the drawing are made here, by :func:`gid`, so tests can
find the violating pair or the blocked waits in the SVG by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from amkspec.viz.program import ProgramIndex

MAX_TASKS = 50
"""The most tasks a timeline draws; a witness with more is drawn as its neighbourhood."""

MAX_COUNTERS = 6
"""The most counters stepped under a timeline (those the witness's tasks wait on first)."""

TASK_ROLES = ("reader", "writer", "first", "second", "clobberer", "task")
"""Keys of a witness's ``roles`` whose values are task ids (the others name buffers, pages)."""

VIOLATING_ROLES = {
    "read-race": ("reader", "writer"),
    "kv-race": ("reader", "writer"),
    "unwritten-read": ("reader",),
    "write-race": ("first", "second"),
    "page-clobber": ("clobberer", "reader"),
}
"""By witness kind, the roles whose tasks are the violation itself (outlined in red)."""


def gid(*parts: object) -> str:
    """The SVG element id of one drawn thing, e.g. ``gid("role", "reader")`` = ``role-reader``."""
    return "-".join(str(p) for p in parts)


@attrs.frozen
class Lane:
    """One row of the timeline: an SM (``sm`` set) or one unassigned task (``task`` set)."""

    label: str
    sm: int | None = None
    task: int | None = None


@attrs.frozen
class Bar:
    """Task ``task`` runs on ``lane`` from x = ``start`` to ``end`` (None: still running when the
    witness ends)."""

    task: int
    lane: int
    start: int
    end: int | None


@attrs.frozen
class Ghost:
    """A task that never started: blocked in a stuck state, or a member of a wait cycle;
    ``why`` says what it waits for."""

    task: int
    lane: int
    why: tuple[str, ...]
    kind: str


@attrs.frozen
class CycleArrow:
    """Edge of a wait cycle: ``src`` must end before ``dst`` can start (``via`` a counter or queue)."""

    src: int
    dst: int
    via: str


@attrs.frozen
class Threshold:
    """A wait of a drawn task on a counter: the value it needs and who waits."""

    value: int
    waiters: tuple[int, ...]


@attrs.frozen
class CounterTrack:
    """One counter: its value before the first drawn event (``initial``) and after each drawn
    event (``values``, one per x), the thresholds drawn tasks wait for, and its producer count."""

    counter: int
    initial: int
    values: tuple[int, ...]
    thresholds: tuple[Threshold, ...]
    full: int


@attrs.frozen
class TimelineScene:
    """Everything a timeline draws; x = position among the drawn events (0-based)."""

    kind: str
    title: str
    note: str
    lanes: tuple[Lane, ...]
    bars: tuple[Bar, ...]
    ghosts: tuple[Ghost, ...]
    cycle: tuple[CycleArrow, ...]
    counters: tuple[CounterTrack, ...]
    steps: tuple[int, ...]
    """1-based witness step number of each drawn event."""
    events: tuple[tuple[str, int], ...]
    roles: dict[str, int]
    buffers: dict[str, str]
    names: dict[int, str]

    @property
    def tasks(self) -> set[int]:
        return {b.task for b in self.bars} | {g.task for g in self.ghosts}

    def role_of(self, task: int) -> str | None:
        """The violating role a task plays in this kind of witness, if any (:data:`VIOLATING_ROLES`)."""
        return next((r for r in VIOLATING_ROLES.get(self.kind, ()) if self.roles.get(r) == task), None)


def _task_roles(w: Mapping[str, Any]) -> dict[str, int]:
    roles = w.get("roles") or {}
    return {r: v for r, v in roles.items() if r in TASK_ROLES and type(v) is int}


def named_tasks(w: Mapping[str, Any]) -> list[int]:
    """The tasks a witness names: its ``tasks``, task roles, blocked tasks (and what queues them)
    and cycle ends, in that order."""
    out: list[int] = [t for t in w.get("tasks") or () if type(t) is int]
    out.extend(_task_roles(w).values())
    for b in w.get("blocked") or ():
        out.append(b["task"])
        if type(b.get("queue_predecessor")) is int:
            out.append(b["queue_predecessor"])
    for e in w.get("cycle") or ():
        out.extend((e["from"], e["to"]))
    return list(dict.fromkeys(out))


def _events(w: Mapping[str, Any]) -> list[tuple[str, int, dict[int, int]]]:
    return [
        (ev["event"], ev["task"], {int(c): v for c, v in (ev.get("counters") or {}).items()})
        for ev in w.get("events") or ()
    ]


def _elided(events: list[tuple[str, int, dict[int, int]]], kept: set[int]) -> str:
    gone = sum(t not in kept for _, t, _ in events)
    return f"; {gone} of {len(events)} events of other tasks elided" if gone else ""


def _selection(
    ix: ProgramIndex, w: Mapping[str, Any], events: list[tuple[str, int, dict[int, int]]]
) -> tuple[list[int], str]:
    """The tasks to draw and the note saying what was left out."""
    named = named_tasks(w)
    full = list(dict.fromkeys([t for _, t, _ in events] + named))
    if len(full) <= MAX_TASKS:
        return full, ""
    if len(named) > MAX_TASKS:
        kept_named = set(telling_order(ix, w)[:MAX_TASKS])
        shown = [t for t in full if t in kept_named]
        note = (
            f"Part of the witness: it names {len(named)} of the program's {len(ix.order)} tasks; the "
            f"{len(shown)} most telling are drawn (its own tasks, then those blocked by nothing else "
            f"that is blocked){_elided(events, kept_named)}."
        )
        return shown, note
    last_seen = {t: n for n, (_, t, _) in enumerate(events)}
    preds = [p for t in named for p in ix.preds(t) if p not in named]
    preds = list(dict.fromkeys(preds))
    room = max(0, MAX_TASKS - len(named))
    kept = sorted(preds, key=lambda p: -last_seen.get(p, -1))[:room]
    chosen = set(named) | set(kept)
    shown = [t for t in full if t in chosen] + [t for t in chosen if t not in full]
    dropped = len(preds) - len(kept)
    note = (
        f"Neighbourhood of the witness: {len(shown)} of {len(ix.order)} tasks (the {len(named)} it names "
        f"and their direct predecessors{f', {dropped} more predecessors not drawn' if dropped else ''})"
        f"{_elided(events, chosen)}."
    )
    return shown, note


def telling_order(ix: ProgramIndex, w: Mapping[str, Any]) -> list[int]:
    """The named tasks, most telling first: the witness's ``tasks`` and task roles, then blocked
    tasks whose unmet waits and SM queue hold no other blocked task (the roots of a stuck state),
    then the rest in :func:`named_tasks` order."""
    head = [t for t in w.get("tasks") or () if type(t) is int] + list(_task_roles(w).values())
    blocked = w.get("blocked") or ()
    stuck = {b["task"] for b in blocked}
    roots = [
        b["task"]
        for b in blocked
        if b.get("queue_predecessor") not in stuck
        and not any(p in stuck for x in b["waits"] for p in ix.producers.get(x["counter"], ()))
    ]
    return list(dict.fromkeys(head + roots + named_tasks(w)))


def _lanes(ix: ProgramIndex, shown: list[int], per_task: bool) -> tuple[list[Lane], dict[int, int]]:
    """One lane per SM (ascending) then one per unassigned task, in first-drawn order; or, for a
    cycle (``per_task``), one lane per task in cycle order, so the cycle reads top to bottom."""
    if per_task:
        labels = [ix.name(t) + (f" · SM {ix.sms[t]}" if ix.sms.get(t) is not None else "") for t in shown]
        return [Lane(label, task=t) for t, label in zip(shown, labels, strict=True)], {
            t: n for n, t in enumerate(shown)
        }
    sms = sorted({s for t in shown if (s := ix.sms.get(t)) is not None})
    lanes = [Lane(f"SM {s}", sm=s) for s in sms]
    lane_of_sm = {s: n for n, s in enumerate(sms)}
    lane_of: dict[int, int] = {}
    for t in shown:
        sm = ix.sms.get(t)
        if sm is not None:
            lane_of[t] = lane_of_sm[sm]
        else:
            lane_of[t] = len(lanes)
            lanes.append(Lane(ix.name(t), task=t))
    return lanes, lane_of


def _ghosts(ix: ProgramIndex, w: Mapping[str, Any], lane_of: dict[int, int]) -> list[Ghost]:
    out: list[Ghost] = []
    for b in w.get("blocked") or ():
        why = [
            f"waits c{x['counter']} ≥ {x['threshold']}, c{x['counter']} = {x['value']}" for x in b["waits"]
        ]
        if type(b.get("queue_predecessor")) is int:
            why.append(f"queued behind {ix.name(b['queue_predecessor'])}")
        if b["task"] in lane_of:
            out.append(Ghost(b["task"], lane_of[b["task"]], tuple(why), "blocked"))
    waiting: dict[int, list[str]] = {}
    for e in w.get("cycle") or ():
        waiting.setdefault(e["to"], []).append(f"waits for {ix.name(e['from'])} ({e['via']})")
    blocked = {g.task for g in out}
    cyclic = sorted((t for t in waiting if t not in blocked and t in lane_of), key=lambda t: lane_of[t])
    out.extend(Ghost(t, lane_of[t], tuple(waiting[t]), "cycle") for t in cyclic)
    return out


def _counters(
    ix: ProgramIndex,
    w: Mapping[str, Any],
    events: list[tuple[str, int, dict[int, int]]],
    drawn: list[int],
    shown: list[int],
) -> list[CounterTrack]:
    """Counters the drawn tasks wait on, their value after each drawn event, and the thresholds."""
    blocked_counters = [x["counter"] for b in w.get("blocked") or () for x in b["waits"]]
    waited = [c for t in named_tasks(w) for c, _ in ix.waits.get(t, ())]
    waited += [c for t in shown for c, _ in ix.waits.get(t, ())]
    wanted = list(dict.fromkeys(blocked_counters + [c for c in w.get("counters") or ()] + waited))
    wanted = wanted[:MAX_COUNTERS]
    value = {c: ix.counter_init.get(c, 0) for c in wanted}
    initial: dict[int, int] | None = None
    drawn_at = set(drawn)
    series: dict[int, list[int]] = {c: [] for c in wanted}
    for n, (kind, task, shown_values) in enumerate(events):
        if initial is None and n in drawn_at:
            initial = dict(value)
        for c in wanted:
            if c in shown_values:
                value[c] = shown_values[c]
            elif kind == "end" and ix.out_counter.get(task) == c:
                value[c] += 1
        if n in drawn_at:
            for c in wanted:
                series[c].append(value[c])
    if initial is None:
        initial = dict(value)
    tracks = []
    for c in wanted:
        waiters: dict[int, list[int]] = {}
        for t in shown:
            for wc, th in ix.waits.get(t, ()):
                if wc == c:
                    waiters.setdefault(th, []).append(t)
        thresholds = tuple(Threshold(v, tuple(ts)) for v, ts in sorted(waiters.items()))
        full = ix.counter_init.get(c, 0) + len(ix.producers.get(c, ()))
        tracks.append(CounterTrack(c, initial[c], tuple(series[c]), thresholds, full))
    return tracks


def _buffer_names(prog_buffers: Mapping[int, str], w: Mapping[str, Any]) -> dict[str, str]:
    roles = w.get("roles") or {}
    return {
        r: prog_buffers.get(v, f"buffer {v}")
        for r, v in roles.items()
        if r in ("buffer", "other") and type(v) is int
    }


def _held_back(
    ix: ProgramIndex, blocked: Mapping[int, Mapping[str, Any]]
) -> dict[int, list[tuple[int, str]]]:
    """Blocked task → the blocked tasks it holds back (sorted): a producer of a counter they wait on
    below its threshold (via ``c<n>``), or their SM-queue predecessor (via ``SM queue``)."""
    held: dict[int, list[tuple[int, str]]] = {t: [] for t in blocked}
    for t, b in blocked.items():
        if b.get("queue_predecessor") in held and b["queue_predecessor"] != t:
            held[b["queue_predecessor"]].append((t, "SM queue"))
        for x in b.get("waits") or ():
            for p in ix.producers.get(x.get("counter"), ()):
                if p in held and p != t:
                    held[p].append((t, f"c{x['counter']}"))
    return {t: sorted(set(ts)) for t, ts in held.items()}


def wait_cycle(ix: ProgramIndex, w: Mapping[str, Any]) -> list[CycleArrow]:
    """The wait cycle of a stuck state (spec §3.2), edge by edge: the first cycle of
    :func:`_held_back` found depth first from the lowest blocked task, successors in ascending
    order (the validator's D204 order); empty when the blocked tasks hold one another back without
    a cycle (a wait no task can ever satisfy)."""
    stuck = [b for b in w.get("blocked") or () if isinstance(b, Mapping) and type(b.get("task")) is int]
    blocked = {b["task"]: b for b in stuck}
    held = _held_back(ix, blocked)
    state: dict[int, bool] = {}  # True while on the path, False once explored
    for root in sorted(held):
        if root in state:
            continue
        path, vias, todo = [root], list[str](), [iter(held[root])]
        state[root] = True
        while todo:
            step = next(todo[-1], None)
            if step is None:
                state[path.pop()] = False
                todo.pop()
                if vias:
                    vias.pop()
                continue
            t, via = step
            if state.get(t) is True:
                ring = path[path.index(t):]
                labels = [*vias[len(vias) - len(ring) + 1:], via]
                return [CycleArrow(a, b, v) for a, b, v in zip(ring, [*ring[1:], t], labels, strict=True)]
            if t not in state:
                state[t] = True
                path.append(t)
                vias.append(via)
                todo.append(iter(held[t]))
    return []


def _title(ix: ProgramIndex, w: Mapping[str, Any], cycle: list[CycleArrow]) -> str:
    kind, what = w.get("kind", "witness"), str(w.get("property", ""))
    if not cycle:
        return f"{kind}: {what}".rstrip(": ")
    ring = " → ".join(ix.name(e.src) for e in cycle) + f" → {ix.name(cycle[0].src)}"
    return f"{kind}: wait cycle {ring}" + (f" ({what})" if what else "")


def timeline_scene(
    ix: ProgramIndex, w: Mapping[str, Any], buffer_names: Mapping[int, str] | None = None
) -> TimelineScene:
    """Decide what the timeline of witness ``w`` (its JSON form) draws for the indexed program.

    A cycle (the witness's own, or the wait cycle of a stuck state) is drawn edge by edge and named
    in the title; where nothing ran before it, each task gets its own lane, in cycle order."""
    events = _events(w)
    shown, note = _selection(ix, w, events)
    explicit = [CycleArrow(e["from"], e["to"], e["via"]) for e in w.get("cycle") or ()]
    cycle = explicit or (wait_cycle(ix, w) if w.get("kind") == "deadlock" else [])
    per_task = w.get("kind") == "cycle" or bool(cycle and not events)
    if per_task and cycle:
        ring = [e.src for e in cycle if e.src in shown]
        shown = [*ring, *(t for t in shown if t not in ring)]
    keep = set(shown)
    drawn = [n for n, (_, t, _) in enumerate(events) if t in keep]
    lanes, lane_of = _lanes(ix, shown, per_task)
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for x, n in enumerate(drawn):
        kind, task, _ = events[n]
        (starts if kind == "start" else ends)[task] = x
    bars = [Bar(t, lane_of[t], x, ends.get(t)) for t, x in starts.items()]
    return TimelineScene(
        kind=str(w.get("kind", "")),
        title=_title(ix, w, cycle),
        note=note,
        lanes=tuple(lanes),
        bars=tuple(bars),
        ghosts=tuple(_ghosts(ix, w, lane_of)),
        cycle=tuple(cycle),
        counters=tuple(_counters(ix, w, events, drawn, shown)),
        steps=tuple(n + 1 for n in drawn),
        events=tuple((events[n][0], events[n][1]) for n in drawn),
        roles=_task_roles(w),
        buffers=_buffer_names(buffer_names or {}, w),
        names={t: ix.name(t) for t in shown},
    )


def witness_tasks(w: Mapping[str, Any]) -> Iterable[int]:
    """Every task a witness mentions (named or in its trace): all of them appear in its timeline
    unless it is drawn as a neighbourhood."""
    return dict.fromkeys([*(ev["task"] for ev in w.get("events") or ()), *named_tasks(w)])
