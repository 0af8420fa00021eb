"""Witnesses: a bad execution read out of a Z3 model, and its renderings (spec §2.2, §3).

A :class:`Witness` names the violated property, the tasks/buffers/counters
involved and a trace of ``start``/``end`` events. Its JSON form
(:meth:`Witness.to_dict`) is what ``amkspec explain --json`` prints and what
:func:`amkspec.evidence.replay.check_witness` re-executes::

    {"kind": "read-race" | "kv-race" | "unwritten-read" | "write-race" | "page-clobber"
             | "deadlock" | "cycle",
     "property": "<one line>",
     "tasks": [ids], "buffers": [ids], "counters": [ids],
     "roles": {"reader": id, "writer": id, ...},
     "events": [{"event": "start"|"end", "task": id, "counters": {"<cid>": value}}, ...],
     "blocked": [{"task": id, "waits": [{"counter", "threshold", "value"}],
                  "queue_predecessor": id | null}],   # deadlock
     "cycle": [{"from": id, "to": id, "via": "counter <c>" | "sm <s> queue"}]}   # cycle

``roles`` by kind: read-race/kv-race ``reader``, ``writer``, ``buffer``;
unwritten-read ``reader``, ``buffer``; write-race ``first``, ``second``,
``buffer``; page-clobber ``writer`` and ``reader`` (of ``buffer``),
``clobberer`` (writes ``other`` on the same ``page``); deadlock ``task`` when
the query targeted one task.

``counters`` on an event gives the counter values right after it: for an
``end``, the task's out_counter after its increment; for a ``start``, every
counter the task waits on (each at least its threshold in a legal trace).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from amkspec.evidence.replay import initial_counters
from amkspec.ir import MegakernelProgram
from amkspec.ir.trace import Event, Trace

KINDS = ("read-race", "kv-race", "unwritten-read", "write-race", "page-clobber", "deadlock", "cycle")


@attrs.frozen
class BlockedWait:
    """A wait of a blocked task that does not hold: ``counter`` is ``value`` < ``threshold``."""

    counter: int
    threshold: int
    value: int


@attrs.frozen
class Blocked:
    """An unstarted task of a stuck state and exactly what blocks it."""

    task: int
    waits: tuple[BlockedWait, ...] = ()
    queue_predecessor: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "waits": [attrs.asdict(w) for w in self.waits],
            "queue_predecessor": self.queue_predecessor,
        }


@attrs.frozen
class CycleEdge:
    """An edge of a wait cycle: ``src`` must end before ``dst`` can start, ``via`` a counter or an
    SM queue (spec §3.2)."""

    src: int
    dst: int
    via: str


@attrs.frozen
class Witness:
    """A concrete bad execution (or a cycle) exhibiting ``kind``."""

    kind: str
    property: str
    tasks: tuple[int, ...]
    buffers: tuple[int, ...] = ()
    counters: tuple[int, ...] = ()
    roles: dict[str, int] = attrs.Factory(dict)
    events: Trace = ()
    blocked: tuple[Blocked, ...] = ()
    cycle: tuple[CycleEdge, ...] = ()

    def to_dict(self, prog: MegakernelProgram) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "property": self.property,
            "tasks": list(self.tasks),
            "buffers": list(self.buffers),
            "counters": list(self.counters),
            "roles": dict(self.roles),
            "events": annotate(prog, self.events),
            "blocked": [b.to_dict() for b in self.blocked],
            "cycle": [{"from": e.src, "to": e.dst, "via": e.via} for e in self.cycle],
        }


def annotate(prog: MegakernelProgram, events: Sequence[Event]) -> list[dict[str, Any]]:
    """Events as JSON with the counter values right after each."""
    by_id = {t.id: t for t in prog.tasks}
    values = initial_counters(prog)
    out: list[dict[str, Any]] = []
    for ev in events:
        task = by_id[ev.task]
        if ev.kind == "end":
            values[task.out_counter] += 1
            shown = {task.out_counter: values[task.out_counter]}
        else:
            shown = {w.counter: values[w.counter] for w in task.waits}
        out.append({**ev.to_dict(), "counters": {str(c): v for c, v in shown.items()}})
    return out


def _describe(prog: MegakernelProgram, tid: int) -> str:
    return next((t.describe() for t in prog.tasks if t.id == tid), str(tid))


def render_text(prog: MegakernelProgram, w: Witness) -> str:
    """A witness for people: the property, then the numbered interleaving."""
    lines = [f"{w.kind}: {w.property}"]
    if w.events:
        lines.append(f"  execution ({len(w.events)} events):")
        for n, ev in enumerate(annotate(prog, w.events), 1):
            vals = ", ".join(f"c{c}={v}" for c, v in ev["counters"].items())
            lines.append(
                f"    {n:>3}. {ev['event']:<5} {_describe(prog, ev['task'])}"
                + (f"  [{vals}]" if vals else "")
            )
    for b in w.blocked:
        why = [f"waits c{x.counter} >= {x.threshold} but c{x.counter} = {x.value}" for x in b.waits]
        if b.queue_predecessor is not None:
            why.append(f"its SM queue predecessor {_describe(prog, b.queue_predecessor)} has not run")
        lines.append(f"  blocked {_describe(prog, b.task)}: " + "; ".join(why))
    if w.cycle:
        path = " -> ".join(_describe(prog, e.src) + f" ({e.via})" for e in w.cycle)
        lines.append(f"  cycle: {path} -> {_describe(prog, w.cycle[0].src)}")
    return "\n".join(lines)


def render_dot(prog: MegakernelProgram, w: Witness) -> str:
    """The producer→consumer DAG in Graphviz DOT with the witness highlighted.

    Involved tasks are red, blocked tasks orange, tasks that ran in the trace
    are labelled with their start position; cycle edges are drawn bold red.
    """
    position = {ev.task: n for n, ev in enumerate(e for e in w.events if e.kind == "start")}
    blocked = {b.task for b in w.blocked}
    cyc = {(e.src, e.dst) for e in w.cycle}
    lines = [
        "digraph witness {",
        "  rankdir=TB;",
        f'  label="{w.kind}: {_esc(w.property)}";',
        "  node [shape=box, fontname=monospace];",
    ]
    for t in prog.tasks:
        attrs_ = [
            f'label="{_esc(t.describe())}' + (f"\\n#{position[t.id] + 1}" if t.id in position else "") + '"'
        ]
        if t.id in w.tasks:
            attrs_.append('color=red, style=filled, fillcolor="#ffd0d0"')
        elif t.id in blocked:
            attrs_.append('style=filled, fillcolor="#ffe0b0"')
        lines.append(f"  t{t.id} [{', '.join(attrs_)}];")
    producers: dict[Any, list[int]] = {}
    for t in prog.tasks:
        producers.setdefault(t.out_counter, []).append(t.id)
    for t in prog.tasks:
        for wt in t.waits:
            for p in producers.get(wt.counter, []):
                style = ", color=red, penwidth=2" if (p, t.id) in cyc else ""
                lines.append(f'  t{p} -> t{t.id} [label="c{wt.counter}>={wt.threshold}"{style}];')
    lines.extend(
        f'  t{e.src} -> t{e.dst} [style=dashed, color=red, penwidth=2, label="{_esc(e.via)}"];'
        for e in w.cycle
        if e.via.startswith("sm")
    )
    lines.append("}")
    return "\n".join(lines)


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
