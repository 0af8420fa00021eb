"""The event-driven ready structure of a program (spec §2), built once per VM.

For every task the number of waits not met by the counters' initial values,
and for every counter the waiting tasks bucketed by threshold: counters only
ever grow by 1, so when counter ``c`` reaches ``v`` exactly the bucket
``(c, v)`` is released. A launch costs O(V + E).
"""

from __future__ import annotations

import attrs

from amkspec.ir import MegakernelProgram
from amkspec.vm.errors import DeadlockError, StuckTask


@attrs.define
class Plan:
    """Indexes of one program by task-list position."""

    program: MegakernelProgram
    init: dict[int, int]
    unmet: list[int]
    release: dict[int, dict[int, list[int]]]
    counter_of: list[int]

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
