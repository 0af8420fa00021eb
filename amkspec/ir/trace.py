"""Execution traces: sequences of task ``start``/``end`` events (spec §2.2).

A trace is what a witness is made of, what the replay checker re-executes and
what the ReferenceVM's replay policy follows. Its JSON form is
``[{"event": "start", "task": 3}, {"event": "end", "task": 3}, ...]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs

EventKind = Literal["start", "end"]


@attrs.frozen
class Event:
    """Task ``task`` starts (its waits hold) or ends (its out_counter is incremented)."""

    kind: EventKind
    task: int

    def to_dict(self) -> dict[str, Any]:
        """The event's JSON form, ``{"event": "start", "task": 3}``."""
        return {"event": self.kind, "task": self.task}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        """The event of its JSON form; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"not a trace event: {data!r}")
        kind = data.get("event")
        task = data.get("task")
        if kind not in ("start", "end") or type(task) is not int:
            raise ValueError(f"not a trace event: {data!r}")
        return cls(kind, task)


Trace = tuple[Event, ...]


def trace_from_json(items: Iterable[dict[str, Any]]) -> Trace:
    """A trace from its JSON form (spec §2.2); ValueError on a malformed event."""
    return tuple(Event.from_dict(item) for item in items)
