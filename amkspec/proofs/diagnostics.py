"""Diagnostics: the stable codes of every proof obligation and the findings they produce.

Each obligation family registers its codes here (code, family, spec clause,
severity, one-line summary); :func:`diag` builds a finding from a code so that
severity and clause always come from the registry. The docs site renders
:data:`CODES` as the table of diagnostic codes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs


class Severity(enum.Enum):
    """ERROR findings reject a program (spec §3); WARNING findings are reported only."""

    ERROR = "error"
    WARNING = "warning"


class Family(enum.Enum):
    """Obligation families (DESIGN.md "Proof obligations")."""

    STRUCTURE = "structure"
    DEADLOCK = "deadlock"
    RACES = "races"
    MEMORY = "memory safety"
    OUTPUTS = "outputs and launch"


@attrs.frozen
class CodeInfo:
    """A registered diagnostic code."""

    code: str
    family: Family
    clause: str
    severity: Severity
    summary: str


CODES: dict[str, CodeInfo] = {}
"""Every registered code, in registration order."""


def register(code: str, family: Family, clause: str, severity: Severity, summary: str) -> str:
    """Register a code once and return it (use the result as a module constant)."""
    if code in CODES:
        raise ValueError(f"diagnostic code {code} registered twice")
    CODES[code] = CodeInfo(code, family, clause, severity, summary)
    return code


def _ints(values: Iterable[Any]) -> tuple[int, ...]:
    return tuple(v for v in values if type(v) is int)


@attrs.frozen
class Diagnostic:
    """One finding of :func:`amkspec.validate`: which rule, where, and why (spec §3)."""

    code: str
    severity: Severity
    clause: str
    message: str
    tasks: tuple[int, ...] = attrs.field(default=(), converter=_ints)
    buffers: tuple[int, ...] = attrs.field(default=(), converter=_ints)
    counters: tuple[int, ...] = attrs.field(default=(), converter=_ints)

    @property
    def family(self) -> Family:
        return CODES[self.code].family

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "clause": self.clause,
            "message": self.message,
            "tasks": list(self.tasks),
            "buffers": list(self.buffers),
            "counters": list(self.counters),
        }


def diag(
    code: str,
    message: str,
    *,
    tasks: Iterable[Any] = (),
    buffers: Iterable[Any] = (),
    counters: Iterable[Any] = (),
) -> Diagnostic:
    """A finding for a registered code; severity and clause come from the registry."""
    info = CODES[code]
    return Diagnostic(
        code, info.severity, info.clause, message, tuple(tasks), tuple(buffers), tuple(counters)
    )
