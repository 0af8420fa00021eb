"""The exit codes of the ``amkspec`` command line and the shape of its error line.

They live outside :mod:`amkspec.cli` so that :mod:`amkspec.launch` can end an interrupted start-up
the way :class:`amkspec.cli.base.ErrorBoundary` ends an interrupted command, before the command
line has loaded.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_UNUSABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success: the file is valid, the check passed, the output was written"),
    (EXIT_REJECTED, "a verdict against the input: rejected, incorrect, refused, disagreeing"),
    (EXIT_UNUSABLE, "bad usage or unusable input (unreadable, not JSON, over a limit), the output "
                    "could not be written, or the command needs an optional extra that is not installed"),
    (EXIT_INTERNAL, "an internal error: a bug in amkspec (please report it; --debug shows the traceback)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); no partial output file is left"),
)
"""Every exit code of the CLI and its meaning (the generated table of the robustness guide)."""

INTERRUPTED = "interrupted"
"""The error message of Ctrl-C, whenever it comes."""


def error_line(message: str) -> str:
    """The one line the CLI writes on stderr for an error (``message`` already escaped)."""
    return f"amkspec: error: {message}"
