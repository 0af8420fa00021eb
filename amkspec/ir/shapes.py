"""Well-formed buffer shapes (spec §1.3): a tuple of non-negative ints, tested one at a time or a column
at a time. Footprints and the shape rules reason only about these; anything else is for the
structure checks to report."""

from __future__ import annotations

from itertools import chain
from typing import Any


def is_shape(shape: Any) -> bool:
    """A shape the rules can reason about: a tuple of non-negative ints (no bools)."""
    if not isinstance(shape, tuple):
        return False
    for d in shape:  # noqa: SIM110 - a plain loop is 2-3x faster than all() over a generator
        if type(d) is not int or d < 0:
            return False
    return True


def are_shapes(shapes: list[Any]) -> bool:
    """:func:`is_shape` of every entry, a column at a time: True only when each one is exactly a
    tuple of exact non-negative ints (a subclass or a bool makes it False: take the per-entry path)."""
    return shape_dims(shapes) is not None


def shape_dims(shapes: list[Any]) -> list[int] | None:
    """Every dim of every shape, in order, when :func:`are_shapes`; else None."""
    if not {*map(type, shapes)} <= {tuple}:
        return None
    dims = list(chain.from_iterable(shapes))
    return dims if {*map(type, dims)} <= {int} and min(dims, default=0) >= 0 else None
