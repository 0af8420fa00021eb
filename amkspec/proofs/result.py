"""The outcome of :func:`amkspec.validate`: a verdict, its findings and statistics (spec §3)."""

from __future__ import annotations

from typing import Any

import attrs

from amkspec.proofs.diagnostics import FAMILY_SECTION, Diagnostic, Severity

SECTION_TITLES: dict[str, str] = dict(FAMILY_SECTION.values())
"""The sections of spec chapter 3 a report groups findings under, with their headings
(``"§3.3"`` → ``"race-freedom"``): one per obligation family."""


def _section_key(section: str) -> tuple[int, ...]:
    digits = section.lstrip("§").split(".")
    return tuple(int(d) if d.isdigit() else 99 for d in digits)


@attrs.define
class ValidationResult:
    """Verdict of :func:`amkspec.validate`: ``ok`` iff no finding has severity ERROR (spec §3).

    ``errors`` and ``warnings`` are the findings as strings (``"R303 task 7:attn reads ..."``),
    one line each unless a label or name in the program holds a line break (quoted as written;
    the CLI escapes control characters); ``diagnostics`` keeps them structured
    (code, severity, clause, message and the task/buffer/counter ids involved).
    """

    diagnostics: list[Diagnostic] = attrs.Factory(list)
    stats: dict[str, Any] = attrs.Factory(dict)

    def describes(self, prog: Any) -> bool:
        """Whether these stats count ``prog``'s tasks, buffers and counters (a result of another
        program, or of one that could not be indexed, does not)."""
        sizes = {k: getattr(prog, k, None) for k in ("tasks", "buffers", "counters")}
        return all(isinstance(v, list | tuple) and self.stats.get(k) == len(v) for k, v in sizes.items())

    @property
    def ok(self) -> bool:
        """True iff no finding has severity ERROR (spec §3)."""
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def errors(self) -> list[str]:
        """The ERROR findings as ``"CODE message"`` lines."""
        return [_line(d) for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[str]:
        """The WARNING findings as ``"CODE message"`` lines."""
        return [_line(d) for d in self.diagnostics if d.severity is Severity.WARNING]

    @property
    def codes(self) -> list[str]:
        """Distinct codes of the findings, in first-seen order."""
        return list(dict.fromkeys(d.code for d in self.diagnostics))

    def verdict(self) -> str:
        """``VALID`` or ``REJECTED``, as the report's first line says."""
        return "VALID" if self.ok else "REJECTED"

    def by_section(self) -> dict[str, list[Diagnostic]]:
        """Findings grouped by their clause (a section of spec chapter 3), sections in spec order,
        findings in check order."""
        groups: dict[str, list[Diagnostic]] = {}
        for d in self.diagnostics:
            groups.setdefault(d.clause, []).append(d)
        return {k: groups[k] for k in sorted(groups, key=_section_key)}

    def report(self) -> str:
        """Human-readable report: the verdict line, then findings grouped by spec section."""
        n_err, n_warn = len(self.errors), len(self.warnings)
        counts = ", ".join(
            f"{self.stats[k]} {k}" for k in ("tasks", "buffers", "counters", "edges") if k in self.stats
        )
        lines = [
            f"{self.verdict()}: {n_err} error(s), {n_warn} warning(s)" + (f" ({counts})" if counts else "")
        ]
        for section, diags in self.by_section().items():
            lines.append(f"{section} {SECTION_TITLES.get(section, '')}".rstrip())
            lines.extend(f"  {d.severity.value:<7} {d.code} [{d.clause}] {d.message}" for d in diags)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: verdict (``accepted``/``rejected``, as in conformance cases), ok, codes,
        errors, warnings, diagnostics, stats."""
        return {
            "verdict": "accepted" if self.ok else "rejected",
            "ok": self.ok,
            "codes": self.codes,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "stats": dict(self.stats),
        }


def _line(d: Diagnostic) -> str:
    return f"{d.code} {d.message}"
