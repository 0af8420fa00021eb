"""The ``amkspec`` command line.

Exit codes everywhere: 0 ok, 1 rejected or incorrect, 2 bad usage or unusable input.
Errors are one line on stderr. Each command lives in :mod:`amkspec.cli.commands` (a module
per package it drives) and registers itself on :data:`main` when imported below.
"""

from __future__ import annotations

from amkspec.cli.base import main
from amkspec.cli import commands  # registers every command on main

__all__ = ["main"]
