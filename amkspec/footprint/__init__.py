"""The one footprint: exactly which elements each task reads and writes (spec §3.3, §7).

Every opcode's reference numerics (``amkspec.semantics``) read some elements of its
inputs and write some elements of its outputs. This package states those regions
from the task's params and the buffers' shapes and dtypes, mirroring what the
semantics do with them (defaults, ``int()`` conversions, slicing, the packed I4
layout). It is the only place that describes footprints: the race checks,
coverage, the SMT view, the model checker and certificates all derive from it,
and a property test runs every opcode on shadow memory and compares.

Definitions (spec §3.3):

* a task **writes** an element when the semantics store a value into it;
* a task **reads** an element when its value can change a written element.
  An input element that cannot influence any output (an operand the opcode
  ignores, a whole task that writes nothing, a step of a FUSED recipe whose
  result is overwritten) is not read.

A :class:`Region` is a union of boxes over the buffer's **logical** shape (packed I4
columns are logical columns, two per stored byte). When the semantics would
reject the task (missing params, operands of the wrong shape) or the read is
data-dependent (EMBED's table rows are chosen by the ids at run time), the region
is a sound over-approximation and ``exact`` is False with the reason in ``note``.
The package is pure Python (no torch, no z3) and stands on :mod:`amkspec.ir` alone:

* :mod:`~amkspec.footprint.regions`: boxes, regions and their maths;
* :mod:`~amkspec.footprint.rules`: the per-opcode rules (:func:`op_footprint`);
* :mod:`~amkspec.footprint.memo`: the cache shared by one program's tasks;
* :mod:`~amkspec.footprint.reference`: one task's footprint, the definition;
* :mod:`~amkspec.footprint.fast`: every task at once (the validator's batch path), tested
  against the reference.
"""

from __future__ import annotations

from amkspec.footprint.fast import KEYED_MIN_TASKS, all_task_regions
from amkspec.footprint.memo import Memo
from amkspec.footprint.reference import (
    MALFORMED,
    Footprint,
    TaskRegions,
    region_of,
    task_footprint,
    task_regions,
)
from amkspec.footprint.regions import (
    EMPTY,
    UNKNOWN,
    Box,
    Interval,
    Region,
    along,
    first_overlap,
    uncovered,
    union,
    whole,
)
from amkspec.footprint.rules import Operand, op_footprint

__all__ = [
    "EMPTY",
    "KEYED_MIN_TASKS",
    "MALFORMED",
    "UNKNOWN",
    "Box",
    "Footprint",
    "Interval",
    "Memo",
    "Operand",
    "Region",
    "TaskRegions",
    "all_task_regions",
    "along",
    "first_overlap",
    "op_footprint",
    "region_of",
    "task_footprint",
    "task_regions",
    "uncovered",
    "union",
    "whole",
]
