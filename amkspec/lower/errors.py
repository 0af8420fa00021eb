"""The lowering's errors (spec §5): bad arguments, and configs the knob checks refuse."""

from __future__ import annotations

from amkspec.ir import AmkspecError


class LoweringError(AmkspecError, ValueError):
    """The model, target, config or step cannot be lowered (a bad name, position or knob)."""
