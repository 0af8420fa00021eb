"""The commands of ``amkspec``, one module per package it drives; importing this registers them on
:data:`amkspec.cli.base.main`. No module here imports another: what they share lives in
:mod:`amkspec.cli` (options, files, verdicts, demo steps, progress)."""

from amkspec.cli.commands import (
    conformance,  # registers its commands on main
    demo,  # registers its commands on main
    evidence,  # registers its commands on main
    ir,  # registers its commands on main
    lower,  # registers its commands on main
    models,  # registers its commands on main
    proofs,  # registers its commands on main
    search,  # registers its commands on main
    smt,  # registers its commands on main
    vm,  # registers its commands on main
)
