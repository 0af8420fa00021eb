"""The ``amkspec`` command line.

Exit codes everywhere: 0 ok, 1 rejected or incorrect, 2 bad usage or unusable input.
Errors are one line on stderr. Each command group lives in its own module and
registers itself on :data:`main` when imported below.
"""

from __future__ import annotations

from amkspec.cli.base import main
from amkspec.cli import ir_commands  # registers its commands on main
from amkspec.cli import demo  # registers its commands on main
from amkspec.cli import smt_cmd  # registers its commands on main
from amkspec.cli import run_cmd  # registers its commands on main
from amkspec.cli import vm_cmd  # registers its commands on main
from amkspec.cli import validate_cmd  # registers its commands on main
from amkspec.cli import conformance_cmd  # registers its commands on main
from amkspec.cli import search_cmd  # registers its commands on main
from amkspec.cli import exhaustive_cmd  # registers its commands on main

__all__ = ["main"]
