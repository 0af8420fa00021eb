"""Errors raised when a document cannot be represented as a program (spec §6)."""

from __future__ import annotations


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
