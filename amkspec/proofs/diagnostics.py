"""Diagnostics: the stable codes of every proof obligation and the findings they produce.

Each obligation family registers its codes here (code, family, severity, one-line
summary); :func:`diag` builds a finding from a code so that severity and clause always
come from the registry. A code's clause is the section of spec chapter 3 that states
its family's rules (:data:`FAMILY_SECTION`), so the clause a finding cites, the rule it
witnesses and the report section it is filed under are one number. The docs site
renders :data:`CODES` as the table of diagnostic codes.
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
    """Obligation families, one per section of spec chapter 3 (§3.1-§3.5)."""

    STRUCTURE = "structure"
    DEADLOCK = "deadlock"
    RACES = "races"
    MEMORY = "memory safety"
    OUTPUTS = "outputs and launch"

    @property
    def section(self) -> str:
        """The spec section that states this family's rules, e.g. ``"§3.3"`` for races."""
        return FAMILY_SECTION[self][0]

    @property
    def title(self) -> str:
        """The title of :attr:`section` as the spec's heading gives it (lower case)."""
        return FAMILY_SECTION[self][1]


FAMILY_SECTION: dict[Family, tuple[str, str]] = {
    Family.STRUCTURE: ("§3.1", "structure"),
    Family.DEADLOCK: ("§3.2", "deadlock-freedom"),
    Family.RACES: ("§3.3", "race-freedom"),
    Family.MEMORY: ("§3.4", "memory safety"),
    Family.OUTPUTS: ("§3.5", "outputs and launch"),
}
"""Each family's section of spec chapter 3 and its heading: the one place a code's clause comes from."""


@attrs.frozen
class CodeInfo:
    """A registered diagnostic code."""

    code: str
    family: Family
    severity: Severity
    summary: str

    @property
    def clause(self) -> str:
        """The spec section that states the code's rule: its family's section of chapter 3."""
        return self.family.section


CODES: dict[str, CodeInfo] = {}
"""Every registered code, in registration order."""


def register(code: str, family: Family, severity: Severity, summary: str) -> str:
    """Register a code once and return it (use the result as a module constant)."""
    if code in CODES:
        raise ValueError(f"diagnostic code {code} registered twice")
    CODES[code] = CodeInfo(code, family, severity, summary)
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
