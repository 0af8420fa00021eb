"""Errors raised when a document cannot be represented as a program (spec §6)."""

from __future__ import annotations

import json
import re

PathPart = str | int
"""One step of a JSON path: an object key or an array index."""


class AmkspecError(Exception):
    """Base class of every error amkspec raises on bad input."""


class FormatError(AmkspecError, ValueError):
    """The input is not a representable program: not JSON, a wrong JSON type, an
    unknown enum name or a missing required field. ``path`` is the JSON path."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class VersionError(AmkspecError, ValueError):
    """The document's ``ir_version`` or ``abi_version`` has another major version (spec §6)."""


class VersionWarning(UserWarning):
    """The document was written by a newer minor version; it loads, newer fields are kept."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def format_path(parts: list[PathPart]) -> str:
    """``["tasks", 3, "waits"]`` → ``tasks[3].waits``; the empty path is ``(root)`` (spec §6).

    A key that is not a plain name (an int-keyed map's ``"3"``, a key with spaces) is
    written as a quoted subscript: ``pages.buffer_to_page["3"]``.
    """
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _NAME.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(root)"
