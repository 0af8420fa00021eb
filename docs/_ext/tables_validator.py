"""Tables of the validation chapter, generated from :data:`amkspec.proofs.CODES` and the check list."""

from __future__ import annotations

from amkspec.conformance.rules import INTERNAL_CODES, rule_id_for_code
from amkspec.proofs import CODES
from amkspec.proofs.validate import CHECKS

Table = tuple[list[str], list[list[str]]]


def _escape(text: str) -> str:
    """Inline reST: keep ``*`` and backquotes literal in summaries."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")


def diagnostic_codes() -> Table:
    """Every registered diagnostic code of every family, in family order S, D, R, M, O, with the
    rule it witnesses (spec §9.1; the rule's anchor gives its section)."""
    rows = [
        [f"``{info.code}``", "—" if info.code in INTERNAL_CODES else rule_id_for_code(info.code),
         info.family.value, info.severity.value, _escape(info.summary)]
        for info in sorted(CODES.values(), key=lambda i: ("SDRMO".find(i.code[0]), i.code))
    ]
    return ["Code", "Rule", "Family", "Severity", "Meaning"], rows


def check_order() -> Table:
    """The checks of ``validate()`` in the order they run, with the premise each needs."""
    rows = []
    for i, (name, check) in enumerate(CHECKS, 1):
        first = (check.__doc__ or "").strip().split("\n\n")[0]
        summary = " ".join(line.strip() for line in first.splitlines()).replace("*", "\\*")
        rows.append([str(i), name, f"``{check.__module__}.{check.__name__}``", summary])
    return ["#", "Check", "Function", "What it establishes"], rows
