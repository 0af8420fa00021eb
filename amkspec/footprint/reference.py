"""The footprint of one task (spec §3.3): the definition every consumer reads (the
validator, the SMT view, both VMs' replay, the model checker, certificates).
:mod:`amkspec.footprint.fast` computes the same regions for every task at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from amkspec.footprint.memo import Memo
from amkspec.footprint.regions import EMPTY, Region, union
from amkspec.footprint.rules import Operand, op_footprint
from amkspec.ir import Buffer, InstructionKind


@attrs.frozen
class Footprint:
    """Per buffer id, the region a task reads and the region it writes (spec §3.3).

    A buffer named twice among the inputs (or outputs) gets the union. ``exact`` is False
    when some region over-approximates (``note`` says why).
    """

    reads: Mapping[int, Region]
    writes: Mapping[int, Region]
    exact: bool = True
    note: str = ""

    def read(self, buffer: int) -> Region:
        return self.reads.get(buffer, EMPTY)

    def write(self, buffer: int) -> Region:
        return self.writes.get(buffer, EMPTY)


def _logical(region: Region, operand: Operand) -> Region:
    """Stored coordinates → logical ones (packed I4: byte ``j`` holds columns ``2j, 2j+1``)."""
    if region.boxes is None or operand.stored == operand.logical:
        return region
    k = operand.logical[-1]
    boxes = tuple((*b[:-1], (2 * b[-1][0], min(2 * b[-1][1], k))) for b in region.boxes)
    return Region(boxes, region.exact, region.note)


TaskRegions = tuple[Sequence[int], list[Region], Sequence[int], list[Region]]
"""``(input ids, read region per input, output ids, write region per output)`` of one task."""


def task_regions(task: Any, buffers: Mapping[int, Buffer], memo: Memo) -> TaskRegions:
    """Per operand position, the regions of :func:`task_footprint` (the validator's fast path)."""
    op, params = getattr(task, "op", None), getattr(task, "params", None)
    ids_in, codes_in = operands_of(getattr(task, "inputs", None), buffers, memo)
    ids_out, codes_out = operands_of(getattr(task, "outputs", None), buffers, memo)
    if (
        codes_in is None
        or codes_out is None
        or type(op) is not InstructionKind
        or not (type(params) is dict or isinstance(params, Mapping))
    ):
        return ids_in, [MALFORMED] * len(ids_in), ids_out, [MALFORMED] * len(ids_out)
    try:
        key: Any = (op, tuple(params.items()), codes_in, codes_out)
        cached = memo.ops.get(key)
    except TypeError:
        key, cached = None, None
    if cached is None:
        cached = op_regions(memo, key, op, params, codes_in, codes_out)
    return ids_in, cached[0], ids_out, cached[1]


def op_regions(
    memo: Memo,
    key: Any,
    op: InstructionKind,
    params: Mapping[str, Any],
    codes_in: tuple[int, ...],
    codes_out: tuple[int, ...],
) -> tuple[list[Region], list[Region]]:
    """The logical regions of one op over interned operands, stored in ``memo.ops[key]`` (unless None)."""
    operands, packed = memo.operands, memo.packed
    n = len(codes_in)  # the lists without a map or a comprehension: most tasks have one to three operands
    ins = (
        [operands[codes_in[0]], operands[codes_in[1]]]
        if n == 2
        else [operands[codes_in[0]]]
        if n == 1
        else list(map(operands.__getitem__, codes_in))
    )
    outs = [operands[codes_out[0]]] if len(codes_out) == 1 else list(map(operands.__getitem__, codes_out))
    found = op_footprint(op, params, ins, outs)
    if packed and not (packed.isdisjoint(codes_in) and packed.isdisjoint(codes_out)):
        reads, writes = found
        found = (
            [_logical(r, o) for r, o in zip(reads, ins, strict=True)],
            [_logical(w, o) for w, o in zip(writes, outs, strict=True)],
        )
    if key is not None:
        memo.ops[key] = found
    return found


def operands_of(
    value: Any, buffers: Mapping[int, Buffer], memo: Memo
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Known ids of an operand list and their operand codes (None unless every entry is a
    usable buffer)."""
    if not isinstance(value, (list, tuple)):
        return (), None
    known = memo.by_buffer
    if len(value) == 1:  # most output lists
        (bid,) = value
        if type(bid) is not int or bid not in buffers:
            return (), None
        code = known[bid] if bid in known else memo.code(bid, buffers)
        return (bid,), None if code is None else (code,)
    ids: list[int] = []
    codes: list[int | None] = []
    for bid in value:  # a loop, not comprehensions: most lists hold one to three ids
        if type(bid) is int and bid in buffers:
            ids.append(bid)
            codes.append(known[bid] if bid in known else memo.code(bid, buffers))
    if len(ids) != len(value) or None in codes:
        return tuple(ids), None
    return tuple(ids), tuple(codes)  # type: ignore[arg-type]  # None is not in codes


MALFORMED = Region(None, exact=False, note="the task's opcode, params or operands are malformed")


def task_footprint(task: Any, buffers: Mapping[int, Buffer], memo: Memo | None = None) -> Footprint:
    """The footprint of ``task`` over ``buffers`` (id → Buffer); never raises.

    Buffer ids that are not ints or not in ``buffers`` are left out; a task whose opcode,
    params or operands cannot be judged reads and writes every element of the buffers it
    names (inexact). Pass one :class:`Memo` for many tasks of one program.
    """
    ids_in, reads, ids_out, writes = task_regions(task, buffers, memo if memo is not None else Memo())
    exact = all(r.exact for r in reads) and all(w.exact for w in writes)
    note = "" if exact else "; ".join(sorted({r.note for r in (*reads, *writes) if r.note}))
    return Footprint(_by_buffer(ids_in, reads), _by_buffer(ids_out, writes), exact, note)


def region_of(ids: Sequence[int], regions: list[Region], buffer: int) -> Region:
    """The region of ``buffer`` among one task's operands (union when named twice; EMPTY if absent)."""
    named = ids.count(buffer)
    if named == 1:  # most calls: the region as it is, without a list
        return regions[ids.index(buffer)]
    if not named:
        return EMPTY
    return union([r for b, r in zip(ids, regions, strict=True) if b == buffer])


def _by_buffer(ids: Sequence[int], regions: list[Region]) -> dict[int, Region]:
    if len(ids) == len(set(ids)):
        return dict(zip(ids, regions, strict=True))
    table: dict[int, list[Region]] = {}
    for bid, region in zip(ids, regions, strict=True):
        table.setdefault(bid, []).append(region)
    return {bid: rs[0] if len(rs) == 1 else union(rs) for bid, rs in table.items()}
