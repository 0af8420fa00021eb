"""Tables of the robustness guide, generated from :mod:`amkspec.ir.limits` and the CLI's exit codes."""

from __future__ import annotations

from amkspec.exit_codes import EXIT_CODES
from amkspec.ir.limits import limit_rows

Table = tuple[list[str], list[list[str]]]


def limits() -> Table:
    """Every input limit: name, default, how to change it, what it bounds."""
    return ["Limit", "Default", "Override", "Bounds"], [[f"``{n}``", d, o, m] for n, d, o, m in limit_rows()]


def exit_codes() -> Table:
    """The CLI's exit-code contract."""
    return ["Exit code", "Meaning"], [[f"``{code}``", meaning.replace("--debug", "``--debug``")]
                                      for code, meaning in EXIT_CODES]
