"""The ``amkspec`` command line.

Exit codes everywhere: 0 ok, 1 rejected or incorrect, 2 bad usage or unusable input.
Errors are one line on stderr. Each command group lives in its own module and
registers itself on :data:`main`.
"""

from __future__ import annotations

from amkspec.cli.base import main
from amkspec.cli import ir_commands as _ir_commands  # noqa: F401  (registers commands)

__all__ = ["main"]
