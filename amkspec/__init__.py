"""amkspec: the AMK megakernel IR, its validator, its proofs and its reference VM.

The stable top-level API::

    from amkspec import MegakernelProgram, load, loads, dump, dumps, FormatError, VersionError
    from amkspec import validate, ValidationResult, ReferenceVM

``validate`` needs no torch and no z3; ``ReferenceVM`` needs the ``vm`` extra (torch), and so
does ``evaluate`` (one ScheduleConfig → an honest verdict, :mod:`amkspec.search`).
"""

from __future__ import annotations

import importlib
from typing import Any

from amkspec.ir import (
    FormatError,
    MegakernelProgram,
    VersionError,
    dump,
    dumps,
    load,
    loads,
)

__version__ = "0.1.0"

_LAZY = {
    "validate": "amkspec.proofs",
    "ValidationResult": "amkspec.proofs",
    "ReferenceVM": "amkspec.vm",
    "RefusedProgram": "amkspec.vm",
    "DeadlockError": "amkspec.vm",
    "BindingError": "amkspec.vm",
    "ExecutionError": "amkspec.vm",
    "evaluate": "amkspec.search",
}


def __getattr__(name: str) -> Any:
    """Import heavier parts (the validator, the torch-backed VM) on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'amkspec' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BindingError",
    "DeadlockError",
    "ExecutionError",
    "FormatError",
    "MegakernelProgram",
    "ReferenceVM",
    "RefusedProgram",
    "ValidationResult",
    "VersionError",
    "dump",
    "dumps",
    "evaluate",
    "load",
    "loads",
    "validate",
]
