"""The event-driven ready structure of a program (spec §2), built once per VM.

For every task the number of waits not met by the counters' initial values,
and for every counter the waiting tasks bucketed by threshold: counters only
ever grow by 1, so when counter ``c`` reaches ``v`` exactly the bucket
``(c, v)`` is released.

Numerics never change which task becomes ready when (a task adds exactly 1 to its counter,
whatever its data), so the order a policy fires the tasks in is a function of the plan and the
policy alone: :meth:`Plan.schedule` runs the event-driven loop once per policy, without
numerics, and every launch then fires the tasks in that order. The schedule costs O(V + E)
once; a launch, O(V).
"""

from __future__ import annotations

from typing import Any

import attrs

from amkspec.ir import MegakernelProgram
from amkspec.vm.errors import DeadlockError, StuckTask


@attrs.frozen
class Schedule:
    """The tasks (list positions) one policy fires, in order; where the run stops short, the
    counter values and the done flags the deadlock report needs (spec §2)."""

    order: list[int]
    done: list[bool]
    values: dict[int, int]

    @property
    def complete(self) -> bool:
        return len(self.order) == len(self.done)


@attrs.define
class Plan:
    """Indexes of one program by task-list position."""

    program: MegakernelProgram
    init: dict[int, int]
    unmet: list[int]
    release: dict[int, dict[int, list[int]]]
    counter_of: list[int]
    _schedules: dict[Any, Schedule] = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def build(cls, program: MegakernelProgram) -> Plan:
        init = {c.id: c.init for c in program.counters}
        unmet = [0] * len(program.tasks)
        release: dict[int, dict[int, list[int]]] = {}
        for pos, task in enumerate(program.tasks):
            for wait in task.waits:
                if wait.threshold > init.get(wait.counter, 0):
                    unmet[pos] += 1
                    release.setdefault(wait.counter, {}).setdefault(wait.threshold, []).append(pos)
        return cls(program, init, unmet, release, [t.out_counter for t in program.tasks])

    def ready_at_launch(self) -> list[int]:
        return [pos for pos, n in enumerate(self.unmet) if n == 0]

    def schedule(self, policy: Any) -> Schedule:
        """The order ``policy`` (a frozen ListOrder or SeededRandom) fires the tasks in, computed
        by the event-driven loop on the first call and kept (see the module doc)."""
        known = self._schedules.get(policy)
        if known is None:
            known = self._schedules[policy] = self._run(policy.queue())
        return known

    def _run(self, queue: Any) -> Schedule:
        """Pop a ready task, fire it, increment its counter, release the waiters of the new value."""
        unmet = list(self.unmet)
        values = dict(self.init)
        release, counter_of = self.release, self.counter_of
        for pos in self.ready_at_launch():
            queue.push(pos, -1)
        done = [False] * len(unmet)
        order: list[int] = []
        while len(queue):
            pos = queue.pop()
            done[pos] = True
            order.append(pos)
            c = counter_of[pos]
            v = values[c] = values.get(c, 0) + 1
            for waiter in release.get(c, {}).get(v, ()):
                unmet[waiter] -= 1
                if unmet[waiter] == 0:
                    queue.push(waiter, pos)
        return Schedule(order, done, values)

    def deadlock(self, done: list[bool], values: dict[int, int]) -> DeadlockError:
        """The error for a run that stopped with tasks left (names each one's unmet waits)."""
        stuck = []
        for pos, task in enumerate(self.program.tasks):
            if not done[pos]:
                unmet = tuple(
                    (w.counter, w.threshold, values.get(w.counter, 0))
                    for w in task.waits if values.get(w.counter, 0) < w.threshold
                )
                stuck.append(StuckTask(task.id, task.describe(), unmet))
        return DeadlockError(stuck, dict(values))
