"""What one ReferenceVM launch did and where its time went (spec §2.4)."""

from __future__ import annotations

import attrs

from amkspec.vm.replay import ReplayReport


@attrs.define
class RunStats:
    """Execution order (task ids, in start order), per-task numerics time, and the split of the
    launch's wall time into numerics (``compute_s``) and scheduling overhead (``sched_s``)."""

    policy: str
    order: list[int]
    task_s: dict[int, float]
    bind_s: float
    compute_s: float
    sched_s: float
    replay: ReplayReport | None = None

    @property
    def overhead_share(self) -> float:
        """Scheduling time as a share of scheduling plus numerics time."""
        total = self.sched_s + self.compute_s
        return self.sched_s / total if total > 0 else 0.0
