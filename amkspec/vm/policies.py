"""Scheduling policies of the ReferenceVM (spec §2).

A policy decides which ready task runs next. :class:`ListOrder` reproduces the
original reference VM exactly: it swept the task list again and again, firing
each ready task on the spot, so a task made ready by an earlier task of the
same sweep fired in that sweep. Here that order is computed event-driven: a
task that becomes ready when the task at list position ``p`` completes in sweep
``s`` is queued with key ``(s, i)`` if its position ``i > p`` (the sweep has not
reached it yet) and ``(s + 1, i)`` otherwise. :class:`SeededRandom` picks any
ready task uniformly with a seeded generator. :class:`Replay` follows a given
event trace (see :mod:`amkspec.vm.replay`).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from amkspec.ir.trace import Event, Trace
from amkspec.vm.errors import TraceError


class ReadyQueue(Protocol):
    """The ready set of one run: tasks by list position."""

    def push(self, pos: int, cause: int) -> None:
        """Task ``pos`` became ready when task ``cause`` completed (−1: ready at launch)."""

    def pop(self) -> int:
        """The next task to run (the queue is non-empty)."""

    def __len__(self) -> int: ...


class _SweepQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int]] = []
        self._sweep = 0

    def push(self, pos: int, cause: int) -> None:
        heapq.heappush(self._heap, (self._sweep if pos > cause else self._sweep + 1, pos))

    def pop(self) -> int:
        self._sweep, pos = heapq.heappop(self._heap)
        return pos

    def __len__(self) -> int:
        return len(self._heap)


class _RandomQueue:
    def __init__(self, seed: int) -> None:
        self._items: list[int] = []
        self._rng = random.Random(seed)

    def push(self, pos: int, cause: int) -> None:
        self._items.append(pos)

    def pop(self) -> int:
        items = self._items
        i = self._rng.randrange(len(items))
        items[i], items[-1] = items[-1], items[i]
        return items.pop()

    def __len__(self) -> int:
        return len(self._items)


@attrs.frozen
class ListOrder:
    """The original's order: repeated list-order sweeps, each ready task fired immediately."""

    name = "list"

    def queue(self) -> ReadyQueue:
        return _SweepQueue()


@attrs.frozen
class SeededRandom:
    """Any ready task, chosen uniformly by ``random.Random(seed)`` (fresh for every run)."""

    seed: int = 0
    name = "random"

    def queue(self) -> ReadyQueue:
        return _RandomQueue(self.seed)


def events_of(trace: Any) -> Trace:
    """Events from :class:`Event` objects, their JSON list, or a witness's JSON object with ``events``
    (spec §2.2); anything else is a :class:`TraceError`."""
    items: Iterable[Any] = trace.get("events", ()) if isinstance(trace, Mapping) else trace
    try:
        return tuple(e if isinstance(e, Event) else Event.from_dict(e) for e in items)
    except (ValueError, AttributeError, TypeError) as exc:
        raise TraceError(f"not a trace: {exc}") from exc


@attrs.frozen
class Replay:
    """Follow ``trace`` (start/end events, overlap allowed) with shadow state; after the trace,
    finish the remaining tasks in list order when ``finish`` is set. ``trace`` is anything
    :func:`events_of` reads."""

    trace: Trace = attrs.field(converter=events_of)
    finish: bool = True
    name = "replay"


Policy = ListOrder | SeededRandom | Replay
