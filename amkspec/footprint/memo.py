"""The footprint memo: operands interned to small int codes and op-level regions cached by
``(opcode, params, operand codes)``, shared by one program's tasks (spec §3.3)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from amkspec.footprint.regions import Region
from amkspec.footprint.rules import Operand
from amkspec.ir import Buffer, DType
from amkspec.ir.shapes import are_shapes, is_shape


class Memo:
    """Caches for footprints of many tasks over one buffer table (one program, one pass).

    Every distinct :class:`Operand` is interned to a small int code (``operands[code]``), once
    per buffer id and once per buffer (shape, dtype); op-level results are then keyed by
    ``(opcode, params items, input codes, output codes)``, plain tuples that hash and compare
    without calling attrs methods. Params holding unhashable values (FUSED recipes) have no
    items key and are not cached under one. Params that compare equal (``1``, ``1.0``,
    ``True``) share an entry: every rule reads a non-recipe param through ``int()``, so equal
    values give equal regions (only the rejection note of a non-int could differ, for equal
    values of different repr such as ``Decimal('inf')`` and ``inf``, which no JSON document
    holds). The validator's batch over the tasks' columns keys by the exact params key instead
    (:func:`~amkspec.footprint.fast._keyed_task_regions`, FUSED recipes included), which merges
    no two params that the items key keeps apart; a task with two inputs and one output is keyed
    there by the flat ``(opcode, params key, input code, input code, output code)`` (five items:
    never equal to a four-item key). The batch by rule keys
    (:func:`~amkspec.footprint.fast._rule_keyed_task_regions`) keys by
    :func:`~amkspec.proofs.rule_keys.rule_keys`, whose ints name operand kinds, not codes: a
    flat key and a rule key may be equal tuples of different meaning, so one memo serves one
    batch (a :class:`~amkspec.proofs.index.ProgramIndex` runs its batch once).
    """

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.codes: dict[tuple[tuple[int, ...], bool, tuple[int, ...]], int] = {}
        self.by_buffer: dict[int, int | None] = {}
        self.by_shape: dict[tuple[tuple[int, ...], DType], int] = {}
        self.ops: dict[tuple[Any, ...], tuple[list[Region], list[Region]]] = {}
        self.packed: set[int] = set()
        """Codes of operands whose logical shape is not the stored one (packed I4)."""

    def code(self, bid: int, buffers: Mapping[int, Buffer]) -> int | None:
        """The code of buffer ``bid``'s operand (None when its shape or dtype is unusable)."""
        if bid in self.by_buffer:
            return self.by_buffer[bid]
        buf = buffers[bid]
        shape, dtype = getattr(buf, "shape", None), getattr(buf, "dtype", None)
        code: int | None = None
        if isinstance(shape, tuple) and isinstance(dtype, DType) and is_shape(shape):
            key = (shape if type(shape) is tuple else tuple(shape), dtype)  # exact ints: no 1 == True
            code = self.by_shape.get(key)
            if code is None:
                code = self.by_shape[key] = self.intern(Operand.of_shape(shape, dtype))
        self.by_buffer[bid] = code
        return code

    def codes_of(
        self, buffers: Mapping[int, Buffer], well_formed: bool = False, kinds: Mapping[int, int] | None = None
    ) -> dict[int, int | None]:
        """:meth:`code` of every buffer id of ``buffers`` (the ``by_buffer`` table, filled).

        ``well_formed``: the caller knows every record is a :class:`~amkspec.ir.Buffer` whose
        dtype is a :class:`~amkspec.ir.DType` and whose shape a tuple of exact non-negative ints
        (:attr:`~amkspec.proofs.index.ProgramIndex.buffers_well_formed`), so none is checked again.
        ``kinds`` (only with ``well_formed``): the :func:`~amkspec.proofs.rule_keys.operand_kinds`
        of ``buffers``, each the position of the first buffer with the same shape and dtype."""
        known, by_shape = self.by_buffer, self.by_shape
        records = list(buffers.values())
        if kinds is not None and well_formed and not known:
            placed: dict[int, int] = {}
            for place in dict.fromkeys(kinds.values()):  # first seen first: the codes of the column pass
                buf = records[place]
                key = (buf.shape, buf.dtype)
                code = by_shape.get(key)
                placed[place] = by_shape[key] = self.intern(Operand.of_shape(*key)) if code is None else code
            known.update(zip(kinds, map(placed.__getitem__, kinds.values()), strict=True))
            return known
        if known or not (well_formed or {*map(type, records)} <= {Buffer}):
            for bid in buffers:
                self.code(bid, buffers)
            return known
        shapes = [buf.shape for buf in records]
        dtypes = [buf.dtype for buf in records]
        if not (well_formed or ({*map(type, dtypes)} <= {DType} and are_shapes(shapes))):  # no 1 == True
            for bid in buffers:
                self.code(bid, buffers)
            return known
        # one hash per buffer: ``first`` maps each distinct (shape, dtype) to the position of its
        # first buffer (setdefault with a counter), then each position to a code (int keys)
        first: dict[tuple[tuple[int, ...], DType], int] = {}
        places = list(map(first.setdefault, zip(shapes, dtypes, strict=True), itertools.count()))
        code_at: dict[int, int] = {}
        for key, place in first.items():
            code = by_shape.get(key)
            code_at[place] = by_shape[key] = self.intern(Operand.of_shape(*key)) if code is None else code
        known.update(zip(buffers, map(code_at.__getitem__, places), strict=True))
        return known

    def intern(self, operand: Operand) -> int:
        """The code of ``operand`` (a new one the first time its value is seen)."""
        value = (operand.stored, operand.uint8, operand.logical)
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.operands)
            self.operands.append(operand)
            if operand.stored != operand.logical:
                self.packed.add(code)
        return code
