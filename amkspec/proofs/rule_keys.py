"""Rule keys: what the shape rules of a task depend on, one hashable per task (spec §7).

Equal keys mean equal inputs to the rules (opcode, exact params, each operand's shape and dtype,
which operands are one buffer), so a check that gives every task the result of its key
(memory safety's memo, the footprint batch) judges each task as its own run would. Built once
per program index (:attr:`~amkspec.proofs.index.ProgramIndex.rule_keys`) and shared.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import compress, count, repeat, zip_longest
from operator import is_

from amkspec.ir import Buffer, DType
from amkspec.ir.columns import TaskColumns
from amkspec.ir.shapes import are_shapes
from amkspec.proofs.shapes.context import operand_kind
from amkspec.proofs.shapes.registry import OP_RULES

RULE_KEYS_AT_ONCE = 1 << 14
"""The memo works on blocks of this many tasks, each with its own keys, its own record of clean
keys and its own kinds of the buffers it names (:func:`rule_keys` gives equal rules equal keys
only within a block): a key is a tuple per task, and a million of them, or the kinds of a million
buffers, at once would be the validator's peak memory."""


def operand_kinds(records: dict[int, Buffer], well_formed: bool = False) -> dict[int, int]:
    """Buffer id → an int naming its :func:`operand_kind` (equal kinds, equal ints), for the
    buffers with a well-formed shape. ``well_formed``: the caller knows every record is well
    formed (:attr:`~amkspec.proofs.index.ProgramIndex.buffers_well_formed`)."""
    buffers = records.values()
    shapes, dtypes = [b.shape for b in buffers], [b.dtype for b in buffers]
    if well_formed or ({*map(type, dtypes)} <= {DType} and are_shapes(shapes)):
        # every kind is (shape, dtype): a column at a time, a new kind named by its position
        seen: dict[tuple[tuple[int, ...], DType], int] = {}
        names = map(seen.setdefault, zip(shapes, dtypes, strict=True), count())
        return dict(zip(records, names, strict=True))
    named: dict[tuple[tuple[int, ...], DType | None], int] = {}
    kinds: dict[int, int] = {}
    for bid, buf in records.items():
        kind = operand_kind(buf)
        if kind is not None:
            kinds[bid] = named.setdefault(kind, len(named))
    return kinds


def rule_keys(
    columns: TaskColumns | None, start: int, n: int, kinds: dict[int, int]
) -> list[Hashable | None]:
    """The rule key (None: no key) of each of the ``n`` tasks from position ``start`` on, a
    column at a time.

    The key is what the shape rules of a task depend on: the opcode, the params
    (:func:`~amkspec.ir.columns.param_key`: exact about values, types and order), each
    operand's shape and dtype (:func:`operand_kinds`; inputs then outputs, one column per operand slot,
    None past the last operand and for an unknown buffer) and, for
    :attr:`~amkspec.proofs.shapes.registry.OpRules.same_buffer` opcodes, which operands are one
    buffer; the task's id, label and buffer names appear only in messages. The numbers of inputs
    and outputs are not in the key but follow from it for the tasks the rules run on: each of
    their operands has a kind. No key for a task whose params have none, nor for any task when
    the tasks are not all Task records or an operand list is not a list of hashables.
    """
    if columns is None:
        return [None] * n
    ops, params, ins, outs = columns.ops, columns.param_keys, columns.inputs, columns.outputs
    if n < len(ops):  # a block of a long task list
        ops, params, ins, outs = (column[start : start + n] for column in (ops, params, ins, outs))
    kind = kinds.get
    try:
        in_kinds = [map(kind, slot) for slot in zip_longest(*ins)]
        out_kinds = [map(kind, slot) for slot in zip_longest(*outs)]
        keys: list[Hashable | None] = list(zip(ops, params, *in_kinds, *out_kinds, strict=True))
        if not SAME_BUFFER.isdisjoint(ops):
            for pos in compress(count(), map(SAME_BUFFER.__contains__, ops)):
                ids = ins[pos] + outs[pos]
                keys[pos] = (keys[pos], tuple(map(ids.index, ids)))
    except TypeError:
        return [None] * n
    if not columns.all_keyed:
        for pos in compress(count(), map(is_, params, repeat(None))):
            keys[pos] = None
    return keys


SAME_BUFFER = frozenset(op for op, r in OP_RULES.items() if r.same_buffer)
