"""The limits every input file is read under (spec §6 FormatError): one place for each number.

amkspec reads untrusted files (programs, certificates, traces, weights, configs, inputs).
Every one goes through :mod:`amkspec.ir.bounded`, which enforces these limits and raises a
:class:`~amkspec.ir.errors.FormatError` instead of reading forever, exhausting memory or
overflowing the stack. The two size limits can be raised (or lowered) per run with the
environment variables named in :data:`ENV_VARS`; the docs table is generated from
:func:`limit_rows`.
"""

from __future__ import annotations

import os
import re

import attrs

from amkspec.ir.enums import ABI_MAX_RANK

FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: a float param's bound (spec §1.2, S111)."""

_MIB = 1 << 20
_GIB = 1 << 30


@attrs.frozen
class Limit:
    """One limit: its name, default value, unit, environment override (if any) and meaning."""

    name: str
    default: int
    unit: str
    env: str | None
    meaning: str

    def value(self) -> int:
        """The limit in force: the environment override when set to a positive integer, else the default."""
        if self.env is None:
            return self.default
        raw = os.environ.get(self.env, "").strip()
        if re.fullmatch(r"[0-9]{1,19}", raw) and 0 < int(raw) < (1 << 63):
            return int(raw)
        return self.default


MAX_INPUT_BYTES = Limit(
    "max_input_bytes", 512 * _MIB, "bytes", "AMKSPEC_MAX_INPUT_BYTES",
    "size of any input file as stored (a longer file or stream, such as /dev/zero, is refused after "
    "this many bytes)",
)
MAX_DECOMPRESSED_BYTES = Limit(
    "max_decompressed_bytes", 512 * _MIB, "bytes", "AMKSPEC_MAX_DECOMPRESSED_BYTES",
    "size of a .json.gz file's contents, or of the arrays in a .npz file, once decompressed",
)
MAX_JSON_DEPTH = Limit(
    "max_json_depth", 100, "levels", None,
    "nesting of arrays and objects in any JSON input (a document nested this deep always loads; "
    "one nested more than 3 levels deeper never does: the exact cut depends on the innermost value)",
)
MAX_INT_DIGITS = Limit(
    "max_int_digits", 40, "digits", None,
    "decimal digits of an integer field of a program (a uint64 has 20); any other JSON integer "
    "is bounded by Python's own limit of 4,300 digits",
)
def _half_memory() -> int:
    """Half of this machine's physical memory (8 GiB where it cannot be known)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (AttributeError, ValueError, OSError):
        return 8 * _GIB


MAX_VM_BYTES = Limit(
    "max_vm_bytes", _half_memory(), "bytes", "AMKSPEC_VM_MAX_BYTES",
    "memory the ReferenceVM may allocate for one launch's buffers (default: half the physical "
    "memory); a program needing more is refused before anything is allocated",
)
MAX_SHAPE_DIMS = Limit(
    "max_shape_dims", 64, "dims", None,
    f"length of a buffer's shape list (the ABI allows rank {ABI_MAX_RANK}; a longer shape still loads "
    "so that validate() can report it, up to this many dims)",
)
MAX_BUFFER_BYTES_NO_TARGET = Limit(
    "max_buffer_bytes_no_target", 1 << 40, "bytes", None,
    "size of one buffer of a program without a target (with a target: its hbm_bytes); "
    "validate() reports a larger buffer as S117",
)

LIMITS: tuple[Limit, ...] = (
    MAX_INPUT_BYTES, MAX_DECOMPRESSED_BYTES, MAX_JSON_DEPTH, MAX_INT_DIGITS, MAX_SHAPE_DIMS,
    MAX_BUFFER_BYTES_NO_TARGET, MAX_VM_BYTES,
)
"""Every limit, in the order the docs list them."""

ENV_VARS: tuple[str, ...] = tuple(lim.env for lim in LIMITS if lim.env is not None)
"""The environment variables that override a limit."""


def limit_rows() -> list[tuple[str, str, str, str]]:
    """``(name, default, override, meaning)`` per limit, for the generated docs table."""
    return [
        (lim.name, "half the physical memory" if lim is MAX_VM_BYTES else f"{lim.default:,} {lim.unit}",
         f"``{lim.env}``" if lim.env else "fixed", lim.meaning)
        for lim in LIMITS
    ]
