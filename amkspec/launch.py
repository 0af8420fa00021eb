"""The ``amkspec`` console script and ``python -m amkspec``: load the command line, then run it.

Loading every command group takes a moment. Ctrl-C in that moment ends as Ctrl-C during a command
does (docs/guides/robustness.md): one ``amkspec: error: interrupted`` line and exit 130, with no
traceback.
"""

from __future__ import annotations

import sys

from amkspec.exit_codes import EXIT_INTERRUPTED, INTERRUPTED, error_line


def main() -> None:
    """Import :mod:`amkspec.cli` and run its root group."""
    try:
        from amkspec.cli import main as command_line
    except KeyboardInterrupt:
        sys.stderr.write(error_line(INTERRUPTED) + "\n")
        sys.exit(EXIT_INTERRUPTED)
    command_line()
