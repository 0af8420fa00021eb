"""Colours of the pictures: one per opcode (spec §7), red kept for violations.

Both the timeline and the program graph colour a task by its opcode through
:func:`op_colour`, so a task looks the same in both pictures.
"""

from __future__ import annotations

from amkspec.ir import InstructionKind

_LIGHT = (
    "#eeeeee",
    "#b2df8a",
    "#fdbf6f",
    "#cab2d6",
    "#e5d8bd",
    "#8dd3c7",
    "#bebada",
    "#80b1d3",
    "#ffff99",
    "#b3de69",
    "#ccebc5",
    "#bc80bd",
    "#d9b3ff",
    "#d9d9d9",
    "#ffed6f",
    "#c7e9c0",
    "#dfc27d",
    "#fdd0a2",
    "#c6dbef",
    "#bababa",
)
"""Twenty light, non-red colours; opcode ``k`` gets ``_LIGHT[k]`` (the common opcodes of a decoder
layer — COPY, EMBED, RMSNORM, GEMV_TILE, ATTENTION_TILE, ROPE, SILU_MUL, ADD, KV_APPEND — all differ)."""

OTHER = "#e0e0e0"
VIOLATION = "#d62728"
VIOLATION_FILL = "#f4b6b6"
BLOCKED = "#ff7f0e"
INK = "#222222"
GRID = "#d8d8d8"
MUTED = "#777777"


def op_colour(op: str) -> str:
    """The fill colour of a task whose opcode is named ``op`` (grey for an unknown name)."""
    member = InstructionKind.__members__.get(op)
    return OTHER if member is None else _LIGHT[int(member) % len(_LIGHT)]
