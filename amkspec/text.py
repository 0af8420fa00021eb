"""Text shown to people: a program's own strings with control characters escaped (so no input forges a
line or markup), counts with their plurals.

A task label may hold any character JSON can spell (spec §2: labels are free text). Reports print
them through :func:`escape_line`; pictures and HTML need it too, since XML 1.0 forbids most control
characters (``\\x01`` in an SVG ``<text>`` makes the document ill-formed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def escape_line(text: str) -> str:
    """``text`` on one line: line breaks and other control characters escaped (``\\n``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def escape_lines(text: str) -> str:
    """:func:`escape_line` on each line of ``text``, its line breaks kept (multi-line captions)."""
    return "\n".join(escape_line(line) for line in text.split("\n"))


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: ``1 error``, ``2 errors``, ``0 proofs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def no_such_finding(which: object, how_many: str) -> str:
    """Why ``which`` names no finding (``--finding``, ``--highlight``): they are numbered from 1, and
    ``how_many`` says how many there are (``the program has 1 error``)."""
    return f"there is no finding {which}: findings are numbered from 1 and {how_many}"


def tally(findings: Sequence[Mapping[str, Any]]) -> str:
    """``1 finding``, ``5 proofs``, ``1 finding and 3 proofs``: explain's results, findings (witnessed
    or rule-only) apart from proofs."""
    proofs = sum(1 for f in findings if f.get("status") == "proved")
    parts = [count(len(findings) - proofs, "finding")] if len(findings) > proofs or not proofs else []
    return " and ".join([*parts, *([count(proofs, "proof")] if proofs else [])])
