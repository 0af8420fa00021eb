"""A program's verdict as ``info`` and ``demo`` print it (spec §3)."""

from __future__ import annotations

from typing import Any

from amkspec.cli.display import display_result
from amkspec.ir import MegakernelProgram


def verdict(prog: MegakernelProgram, *, escaped: bool = False, validation: Any = None) -> dict[str, Any]:
    """``{"valid", "errors", "warnings", "first_errors"}`` from :func:`amkspec.validate` (spec §3), or
    from ``validation``, its result on ``prog`` already; ``escaped``: the errors as a text report shows
    them (:func:`display_result`)."""
    from amkspec.proofs import validated

    result = validated(prog, validation)
    if escaped:
        result = display_result(result)
    return {
        "valid": bool(result.ok),
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        "first_errors": [str(e) for e in result.errors[:3]],
    }


def verdict_line(v: dict[str, Any]) -> str:
    """``valid: yes (0 errors, 1 warning)``."""
    errors = f"{v['errors']} error{'s' if v['errors'] != 1 else ''}"
    warns = f"{v['warnings']} warning{'s' if v['warnings'] != 1 else ''}"
    return f"valid: {'yes' if v['valid'] else 'no'} ({errors}, {warns})"
