"""Showing a program's own strings: control characters escaped, so no input forges a line or markup.

A task label may hold any character JSON can spell (spec §2: labels are free text). Reports print
them through :func:`escape_line`; pictures and HTML need it too, since XML 1.0 forbids most control
characters (``\\x01`` in an SVG ``<text>`` makes the document ill-formed).
"""

from __future__ import annotations


def escape_line(text: str) -> str:
    """``text`` on one line: line breaks and other control characters escaped (``\\n``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def escape_lines(text: str) -> str:
    """:func:`escape_line` on each line of ``text``, its line breaks kept (multi-line captions)."""
    return "\n".join(escape_line(line) for line in text.split("\n"))
