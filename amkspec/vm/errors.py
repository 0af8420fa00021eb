"""Errors the ReferenceVM raises instead of tracebacks (spec §2, §3)."""

from __future__ import annotations

from typing import Any

import attrs

from amkspec.ir import AmkspecError


class RefusedProgram(AmkspecError, ValueError):
    """``validate()`` rejected the program, so no VM may run it (spec §3). ``result`` is the report;
    ``vm`` names the VM that refused it in the message."""

    def __init__(self, result: Any, vm: str = "the VM") -> None:
        errors = list(getattr(result, "errors", []) or [])
        first = f"; first: {errors[0]}" if errors else ""
        super().__init__(f"{vm} refuses a program validate() rejected ({len(errors)} error(s){first})")
        self.result = result

    def report(self) -> str:
        """The validator's full report."""
        report = getattr(self.result, "report", None)
        return str(report()) if callable(report) else str(self.result)


class BindingError(AmkspecError, ValueError):
    """A weight, input or KV tensor is missing, mis-shaped or of a type that does not convert losslessly."""


class ExecutionError(AmkspecError, RuntimeError):
    """A task's numerics failed on the bound tensors (for example an EMBED id out of range)."""


class TraceError(AmkspecError, ValueError):
    """A replayed trace is not an execution of the program (a start whose waits do not hold…)."""


@attrs.frozen
class StuckTask:
    """A task that can never start: its id:label and each unmet wait ``(counter, threshold, value)``."""

    task: int
    name: str
    unmet: tuple[tuple[int, int, int], ...]

    def describe(self) -> str:
        waits = ", ".join(f"counter {c} >= {t} (is {v})" for c, t, v in self.unmet)
        return f"{self.name} waits on {waits or 'an earlier task of its SM queue'}"


class DeadlockError(AmkspecError, RuntimeError):
    """No task can start but some never ran (spec §3.2): names the stuck tasks and counter values."""

    SHOWN = 16

    def __init__(self, stuck: list[StuckTask], counters: dict[int, int]) -> None:
        shown = "; ".join(s.describe() for s in stuck[: self.SHOWN])
        more = f"; … and {len(stuck) - self.SHOWN} more" if len(stuck) > self.SHOWN else ""
        values = ", ".join(f"{c}={v}" for c, v in sorted(counters.items()))
        super().__init__(f"deadlock: {len(stuck)} task(s) can never start: {shown}{more}; counters: {values}")
        self.stuck = stuck
        self.counters = counters
