"""Every requirement sentence of the spec names its rule (spec §9.1).

A sentence of a spec chapter that uses an RFC 2119 key word (MUST, MUST NOT, SHOULD, SHOULD NOT,
MAY, and the synonyms SHALL, REQUIRED, RECOMMENDED, OPTIONAL) in upper case is a requirement, and it
MUST cite, in inline code, the ID of a rule of :data:`~amkspec.conformance.rules.RULES` that states
it. A key word written as inline code (``MUST`` between backticks in the Markdown source) is a
mention of the word, not a use. Code fences, directive blocks and headings are not prose and are
not scanned.

:func:`uncited_requirements` is the one check; the docs build (``docs/_ext/amkspec_rules.py``) and
the kit's own tests (``tests/conformance/test_normative.py``) both run it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from amkspec.conformance.rules import RULES

KEYWORD = re.compile(r"\b(MUST|SHOULD|MAY|SHALL|REQUIRED|RECOMMENDED|OPTIONAL)\b")
"""An RFC 2119 key word in upper case (the NOT forms start with one of these)."""

INLINE_CODE = re.compile(r"`[^`]*`")
CITED_ID = re.compile(r"`([A-Z]{2,}(?:-[A-Z]+)+-\d+)`")
"""A rule ID in inline code, e.g. `VAL-RACE-3`."""

ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "cf.", "vs.")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*_{\"'§-])")
BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+\.\s|\||#)")


@attrs.frozen
class Requirement:
    """One prose sentence that uses an RFC 2119 key word, where it is, and the rule IDs it cites."""

    line: int
    text: str
    keywords: tuple[str, ...]
    cited: tuple[str, ...]

    @property
    def unknown(self) -> tuple[str, ...]:
        """The cited IDs that are not rules."""
        return tuple(rid for rid in self.cited if rid not in RULES)

    @property
    def problem(self) -> str | None:
        """Why the sentence is not an identified requirement, or None when it is."""
        if self.unknown:
            return f"cites unknown rule(s) {', '.join(self.unknown)}"
        if not self.cited:
            return f"uses {'/'.join(self.keywords)} but cites no rule ID"
        return None


def requirements(markdown: str) -> list[Requirement]:
    """Every prose sentence of ``markdown`` that uses an RFC 2119 key word."""
    found = []
    for line, paragraph in _paragraphs(markdown):
        for sentence in _sentences(paragraph):
            keywords = tuple(KEYWORD.findall(INLINE_CODE.sub("", sentence)))
            if keywords:
                found.append(Requirement(line, sentence, keywords, tuple(CITED_ID.findall(sentence))))
    return found


def uncited_requirements(markdown: str) -> list[tuple[Requirement, str]]:
    """The requirement sentences of ``markdown`` that cite no rule, or an unknown one, with why."""
    return [(req, req.problem) for req in requirements(markdown) if req.problem is not None]


def _paragraphs(markdown: str) -> Iterator[tuple[int, str]]:
    """(first line number, joined text) of each prose paragraph or list item, outside fences."""
    fence: str | None = None
    start, lines = 0, list[str]()
    for number, raw in enumerate(markdown.splitlines(), start=1):
        stripped = raw.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        opening = re.match(r"^(`{3,}|~{3,}|:{3,})", stripped)
        if opening or not stripped or BLOCK_START.match(raw):
            if lines:
                yield start, " ".join(lines)
            lines = []
            if opening:
                fence = opening.group(1)
                continue
            if not stripped or stripped.startswith("#"):
                continue
        if not lines:
            start = number
        lines.append(stripped)
    if lines:
        yield start, " ".join(lines)


def _sentences(paragraph: str) -> list[str]:
    protected = paragraph
    for short in ABBREVIATIONS:
        protected = protected.replace(short, short.replace(".", "\0"))
    return [s.replace("\0", ".") for s in SENTENCE_END.split(protected) if s.strip()]
