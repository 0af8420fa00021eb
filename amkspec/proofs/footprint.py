"""The one footprint: exactly which elements each task reads and writes (spec §3.3, §7).

Every opcode's reference numerics (``amkspec.semantics``) read some elements of its
inputs and write some elements of its outputs. This module states those regions
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
The module is pure Python (no torch, no z3).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from amkspec.ir import AttentionFlags, Buffer, DType, InstructionKind, QuantFlags, Task
from amkspec.ir.columns import TaskColumns
from amkspec.ir.opcodes import RECIPE_DTYPES, opcode_of
from amkspec.ir.shapes import are_shapes, is_shape

Interval = tuple[int, int]
"""A half-open range ``[start, stop)`` of indices along one dimension."""
Box = tuple[Interval, ...]
"""One interval per dimension of a buffer's logical shape."""


@attrs.frozen
class Region:
    """Elements of one buffer: a union of boxes (``None`` = every element, shape unknown).

    ``exact`` is False when the region over-approximates what the semantics touch;
    ``note`` then says why.
    """

    boxes: tuple[Box, ...] | None
    exact: bool = True
    note: str = ""

    @property
    def is_empty(self) -> bool:
        return self.boxes is not None and not self.boxes

    def overlaps(self, other: Region) -> bool:
        """Whether the two regions of one buffer share an element."""
        mine, theirs = self.boxes, other.boxes
        if mine is None or theirs is None:
            return not (self.is_empty or other.is_empty)  # unknown meets anything non-empty
        for a in mine:
            for b in theirs:
                if boxes_meet(a, b):
                    return True
        return False

    def describe(self) -> str:
        """Short text: ``all``, ``none`` or the boxes as ``[a:b, c:d]``."""
        if self.boxes is None:
            return "all elements"
        if not self.boxes:
            return "no elements"
        shown = ["[" + ", ".join(f"{lo}:{hi}" for lo, hi in box) + "]" for box in self.boxes[:4]]
        more = f" … ({len(self.boxes)} boxes)" if len(self.boxes) > 4 else ""
        return " ∪ ".join(shown) + more


EMPTY = Region(())
UNKNOWN = Region(None, exact=False, note="shape unknown")


def boxes_meet(a: Box, b: Box) -> bool:
    """Two boxes of one buffer intersect (every dimension overlaps; no dimension empty)."""
    for (x0, x1), (y0, y1) in zip(a, b, strict=False):  # noqa: SIM110 - a loop: no generator on a hot path
        if not (x0 < y1 and y0 < x1 and x0 < x1 and y0 < y1):
            return False
    return True


def whole(shape: Sequence[int]) -> Region:
    """Every element of a buffer of ``shape`` (no elements when a dimension is 0)."""
    rank = len(shape)
    if rank == 2:  # the common ranks without a min() and a zip
        rows, cols = shape
        return Region((((0, rows), (0, cols)),)) if rows > 0 and cols > 0 else EMPTY
    if rank == 1:
        return Region((((0, shape[0]),),)) if shape[0] > 0 else EMPTY
    if shape and min(shape) <= 0:
        return EMPTY
    return Region((tuple(zip(itertools.repeat(0), shape)),))


def along(shape: Sequence[int], axis: int, lo: int, hi: int) -> Region:
    """Elements whose index on ``axis`` is in ``[lo, hi)``, every index on the other axes."""
    if not shape or hi <= lo:
        return EMPTY if shape else whole(shape)
    rank = len(shape)
    axis %= rank
    if lo < 0:
        lo = 0
    if rank == 2:  # weights and outputs of tiles: the box without a list, min() or zip
        rows, cols = shape
        if rows <= 0 or cols <= 0:
            return EMPTY
        if axis == 0:
            return Region((((lo, hi if hi < rows else rows), (0, cols)),)) if lo < rows and lo < hi else EMPTY
        return Region((((0, rows), (lo, hi if hi < cols else cols)),)) if lo < cols and lo < hi else EMPTY
    if rank == 3:  # caches (KV_APPEND's rows, attention windows): the box without a list or zip
        d0, d1, d2 = shape
        end = shape[axis]
        if hi > end:
            hi = end
        if lo >= hi or d0 <= 0 or d1 <= 0 or d2 <= 0:
            return EMPTY
        if axis == 0:
            return Region((((lo, hi), (0, d1), (0, d2)),))
        if axis == 1:
            return Region((((0, d0), (lo, hi), (0, d2)),))
        return Region((((0, d0), (0, d1), (lo, hi)),))
    hi = min(hi, shape[axis])
    if lo >= hi or min(shape) <= 0:
        return EMPTY
    box = list(zip(itertools.repeat(0), shape))
    box[axis] = (lo, hi)
    return Region((tuple(box),))


def flat_range(shape: Sequence[int], start: int, stop: int) -> list[Box]:
    """The row-major flat indices ``[start, stop)`` of ``shape`` as boxes (at most 2·rank−1)."""
    if stop <= start:
        return []
    if not shape:
        return [()]
    inner = math.prod(shape[1:])
    if inner == 0:
        return []
    first, last = start // inner, (stop - 1) // inner
    if start % inner == 0 and stop % inner == 0:
        return [((first, last + 1), *((0, d) for d in shape[1:]))]
    if first == last:
        return [((first, first + 1), *b) for b in flat_range(shape[1:], start % inner, stop - first * inner)]
    head = flat_range(shape, start, (first + 1) * inner)
    mid = flat_range(shape, (first + 1) * inner, last * inner)
    tail = flat_range(shape, last * inner, stop)
    return head + mid + tail


def row_prefix(shape: Sequence[int], n_rows: int, width: int, cols: int) -> Region:
    """In ``shape`` viewed as ``[n_rows, width]`` (row-major), the first ``cols`` of every row."""
    if cols >= width:
        return whole(shape)
    if cols <= 0:
        return EMPTY
    return Region(tuple(b for r in range(n_rows) for b in flat_range(shape, r * width, r * width + cols)))


def union(regions: Sequence[Region]) -> Region:
    """The union of regions of one buffer (exact only if all are)."""
    first = regions[0] if regions else None
    if first is not None and regions.count(first) == len(regions):  # e.g. one operand named twice
        boxes = first.boxes  # (count: identity first, then ==)
        if boxes is None or len(set(boxes)) == len(boxes):
            return first  # the union of equal regions is their value
        return Region(tuple(dict.fromkeys(boxes)), first.exact, first.note)
    if any(r.boxes is None for r in regions):
        notes = "; ".join(sorted({r.note for r in regions if r.note}))
        return Region(None, exact=all(r.exact for r in regions), note=notes)
    boxes = tuple(dict.fromkeys(b for r in regions for b in r.boxes or ()))
    notes = "; ".join(sorted({r.note for r in regions if r.note}))
    return Region(boxes, exact=all(r.exact for r in regions), note=notes)


def subtract(boxes: Sequence[Box], cut: Box) -> list[Box]:
    """``boxes`` minus ``cut``, as disjoint pieces."""
    out: list[Box] = []
    for box in boxes:
        if not boxes_meet(box, cut):
            out.append(box)
            continue
        rest = list(box)
        for axis, ((lo, hi), (clo, chi)) in enumerate(zip(box, cut, strict=True)):
            if lo < clo:
                out.append((*rest[:axis], (lo, clo), *rest[axis + 1 :]))
            if chi < hi:
                out.append((*rest[:axis], (chi, hi), *rest[axis + 1 :]))
            rest[axis] = (max(lo, clo), min(hi, chi))
    return out


def uncovered(target: Region, covers: Sequence[Region], shape: Sequence[int]) -> list[Box]:
    """The boxes of ``target`` that no region of ``covers`` contains (``None`` regions: whole)."""
    left = list(target.boxes) if target.boxes is not None else list(whole(shape).boxes or ())
    fast = _uncovered_on_one_axis(left, covers, shape)
    if fast is not None:
        return fast
    for region in covers:
        cut_boxes = region.boxes if region.boxes is not None else whole(shape).boxes or ()
        for cut in cut_boxes:
            left = subtract(left, cut)
            if not left:
                return []
    return left


def _uncovered_on_one_axis(
    left: list[Box], covers: Sequence[Region], shape: Sequence[int]
) -> list[Box] | None:
    """The common case (column tiles): every box spans its buffer on all axes but one, so the
    gaps are a 1-D interval merge; None when that does not hold."""
    if len(left) != 1 or not shape:
        return None
    full = tuple(zip(itertools.repeat(0), shape))
    head, rank = full[:-1], len(full)
    boxes: list[Box] = []
    spans: list[Interval] | None = [] if left[0][:-1] == head else None
    for cover in covers:
        if cover.boxes is None:
            return None
        for b in cover.boxes:
            boxes.append(b)
            if spans is not None:
                if len(b) == rank and b[:-1] == head:
                    spans.append(b[-1])
                else:
                    spans = None
    if spans is not None:
        axis = rank - 1  # column tiles: only the last axis varies
    else:
        axes = {a for b in (*boxes, left[0]) for a, iv in enumerate(b) if iv != full[a]}
        if len(axes) > 1 or any(len(b) != len(shape) for b in (*boxes, left[0])):
            return None
        axis = axes.pop() if axes else len(shape) - 1
        spans = [b[axis] for b in boxes]
    spans.sort()
    lo, hi = left[0][axis]
    gaps: list[Box] = []
    at = lo
    for start, end in spans:
        if start > at:
            gaps.append((*full[:axis], (at, min(start, hi)), *full[axis + 1 :]))
        at = max(at, end)
        if at >= hi:
            break
    if at < hi:
        gaps.append((*full[:axis], (at, hi), *full[axis + 1 :]))
    return [g for g in gaps if g[axis][0] < g[axis][1]] if gaps else gaps


def first_overlap(regions: Sequence[Region]) -> tuple[int, int] | None:
    """Indices ``(i, j)``, ``i < j``, of two overlapping regions of one buffer, or None.

    A sweep along the axis with the most distinct box starts; quadratic only when many
    boxes overlap on that axis. Tiles of one box each that differ only on the last axis
    (column tiles) are first checked by sorting their intervals.
    """
    return None if _disjoint_tiles(regions) else _sweep_overlap(regions)


def _sweep_overlap(regions: Sequence[Region]) -> tuple[int, int] | None:
    """:func:`first_overlap` without the column-tiles shortcut."""
    items: list[tuple[Box, int]] = []
    for i, region in enumerate(regions):
        if region.boxes is None:
            if not region.is_empty:
                other = next((j for j, r in enumerate(regions) if j != i and not r.is_empty), None)
                if other is not None:
                    return (min(i, other), max(i, other))
            continue
        items.extend((b, i) for b in region.boxes)
    if not items:
        return None
    rank = min(len(b) for b, _ in items)
    if rank == 0:
        owners = sorted({i for _, i in items})
        return (owners[0], owners[1]) if len(owners) > 1 else None
    axis = max(range(rank), key=lambda a: len({b[a][0] for b, _ in items}))
    items.sort(key=lambda t: t[0][axis])
    active: list[tuple[Box, int]] = []
    for box, owner in items:
        start = box[axis][0]
        active = [(b, o) for b, o in active if b[axis][1] > start]
        for b, o in active:
            if o != owner and boxes_meet(b, box):
                return (min(o, owner), max(o, owner))
        active.append((box, owner))
    return None


def _disjoint_tiles(regions: Sequence[Region]) -> bool:
    """True when every region is one box, the boxes agree on every axis but the last, and their
    last-axis intervals are pairwise disjoint (then no two regions overlap); False when unsure."""
    spans: list[Interval] = []
    head: Box | None = None
    for region in regions:
        boxes = region.boxes
        if boxes is None or len(boxes) != 1 or not boxes[0]:
            return False
        box = boxes[0]
        if head is None:
            head = box[:-1]
        elif box[:-1] != head:
            return False
        spans.append(box[-1])
    spans.sort()
    end = spans[0][0] if spans else 0
    for lo, hi in spans:
        if lo < end:
            return False
        end = max(end, hi)
    return True


# -- operands --------------------------------------------------------------------------------


_BYTES = frozenset({DType.I4, DType.U8})
"""Dtypes the semantics hold as ``uint8`` tensors."""
_I4 = DType.I4
"""Packed two per byte (a module name: an enum member read through its class costs a lookup)."""
_QUANTIZED = (DType.I8, DType.I4)
"""The ``qdtype`` values of a quantized GEMV/GEMM tile."""
_PARTIAL_WRITE = int(AttentionFlags.PARTIAL_WRITE)
"""The flag's bit as a plain int: ``flags & IntFlag`` runs the enum's Python ``__rand__`` (0.5 µs)."""
_AFFINE = int(QuantFlags.AFFINE)


@attrs.frozen
class Operand:
    """What the semantics see of a bound tensor: its stored shape and whether it is ``uint8``.

    ``logical`` is the buffer's logical shape (packed I4: twice the stored last dim, or less).
    """

    stored: tuple[int, ...]
    uint8: bool
    logical: tuple[int, ...]
    _every: Region | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def every(self) -> Region:
        """:func:`whole` of the stored shape, built once per operand (an interned operand is
        read by many tasks' rules)."""
        region = self._every
        if region is None:
            region = whole(self.stored)
            object.__setattr__(self, "_every", region)  # a frozen record: set once, never changed
        return region

    @classmethod
    def of_buffer(cls, buf: Buffer) -> Operand | None:
        shape, dtype = getattr(buf, "shape", None), getattr(buf, "dtype", None)
        if not isinstance(shape, tuple) or not is_shape(shape) or not isinstance(dtype, DType):
            return None
        return cls.of_shape(shape, dtype)

    @classmethod
    def of_shape(cls, shape: tuple[int, ...], dtype: DType) -> Operand:
        """The operand of a buffer whose ``shape`` holds only non-negative ints."""
        stored = (*shape[:-1], (shape[-1] + 1) // 2) if dtype is _I4 and shape else shape
        return cls(stored, dtype in _BYTES, shape)

    @classmethod
    def scratch(cls, shape: tuple[int, ...], uint8: bool = False) -> Operand:
        return cls(shape, uint8, shape)


class _Reject(Exception):
    """The semantics would raise on this task (its footprint is then over-approximated)."""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _Reject(f"param {value!r} is not an int") from exc


def _param(params: Mapping[str, Any], key: str, default: Callable[[], int] | int) -> int:
    """``int(params[key])``, else ``default`` (called when it is a function: a default read
    from the operands is only computed when the param is absent)."""
    if key in params:
        value = params[key]
        return value if type(value) is int else _int(value)
    return default if type(default) is int else default()  # type: ignore[operator]


def _need(params: Mapping[str, Any], key: str) -> int:
    if key not in params:
        raise _Reject(f"missing param {key!r}")
    return _int(params[key])


def _dim(shape: tuple[int, ...], axis: int) -> int:
    if not -len(shape) <= axis < len(shape):
        raise _Reject(f"shape {shape} has no axis {axis}")
    return shape[axis]


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (:func:`_broadcast_axes`, with two shortcuts)."""
    if shapes and shapes.count(shapes[0]) == len(shapes):
        return shapes[0]  # equal shapes broadcast to themselves
    if len(shapes) == 2:  # e.g. RMSNORM's x and weight: one shape the trailing dims of the other
        long, short = shapes if len(shapes[0]) >= len(shapes[1]) else shapes[::-1]
        if long[len(long) - len(short) :] == short:
            return long  # each trailing dim meets itself, the leading ones meet nothing
    return _broadcast_axes(shapes)


def _broadcast_axes(shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """torch's broadcasting, axis by axis from the last: the dims other than 1 must agree."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(-rank, 0):
        dims = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(dims) > 1:
            raise _Reject(f"shapes {shapes} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _storable(value: tuple[int, ...], out: tuple[int, ...]) -> None:
    """``registry.store``: same numel reshapes, otherwise ``copy_`` broadcasting."""
    if value == out or math.prod(value) == math.prod(out):
        return
    if len(value) > len(out) or _broadcast(value, out) != out:
        raise _Reject(f"cannot store {value} into {out}")


# -- per-opcode rules ------------------------------------------------------------------------

Reads = list[Region]
"""One read region per task input position (in the input's stored coordinates)."""
Writes = list[Region]
Rule = Callable[[Mapping[str, Any], list[Operand], list[Operand]], tuple[Reads, Writes]]


def _arity(ins: list[Operand], outs: list[Operand], n_in: int, n_out: int) -> None:
    if len(ins) < n_in or len(outs) < n_out:
        raise _Reject(f"needs {n_in} inputs and {n_out} outputs")


def _full(ins: list[Operand], used: int) -> Reads:
    """Every element of the first ``used`` inputs, nothing of the rest."""
    n = len(ins)
    if n <= used and n <= 2:  # most rules: one or two inputs, every one read whole
        return [ins[0].every, ins[1].every] if n == 2 else [ins[0].every] if n else []
    return [op.every if i < used else EMPTY for i, op in enumerate(ins)]


def _only_first(outs: list[Operand], region: Region) -> Writes:
    if len(outs) == 1:  # most tasks
        return [region]
    return [region, *[EMPTY] * (len(outs) - 1)] if outs else []


def _nop(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return [EMPTY] * len(ins), [EMPTY] * len(outs)


def _elementwise(n_used: int) -> Rule:
    def rule(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
        _arity(ins, outs, n_used, 1)
        shapes = [ins[0].stored, ins[1].stored] if n_used == 2 else [op.stored for op in ins[:n_used]]
        _storable(_broadcast(*shapes), outs[0].stored)
        return _full(ins, n_used), _only_first(outs, outs[0].every)

    return rule


def _mul(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return _elementwise(2 if len(ins) > 1 else 1)(params, ins, outs)


def _allreduce(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return _elementwise(max(len(ins), 1))(params, ins, outs)


def _copy(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    src, dst = ins[0].stored, outs[0].stored
    if len(src) > len(dst) or _broadcast(src, dst) != dst:
        raise _Reject("COPY does not broadcast")
    return _full(ins, 1), _only_first(outs, outs[0].every)


def _softmax(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    rank = max(len(ins[0].stored), 1)
    if not -rank <= _param(params, "dim", -1) < rank:
        raise _Reject("SOFTMAX dim out of range")
    return _elementwise(1)(params, ins, outs)


def _argmax(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    shape = ins[0].stored
    if math.prod(shape) == 0:
        raise _Reject("SAMPLE_ARGMAX of empty logits")
    _storable(shape[:-1], outs[0].stored)
    return _full(ins, 1), _only_first(outs, outs[0].every)


def _layernorm(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    x = ins[0].stored
    hidden = _param(params, "hidden", lambda: _dim(x, -1))
    if not x or x[-1] != hidden or ins[1].stored != (hidden,):
        raise _Reject("LAYERNORM shapes")
    if len(ins) > 2 and ins[2].stored != (hidden,):
        raise _Reject("LAYERNORM bias shape")
    _storable(x, outs[0].stored)
    return _full(ins, min(len(ins), 3)), _only_first(outs, outs[0].every)


def _embed(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    ids, table = ins[0].stored, ins[1].stored
    if not table:
        raise _Reject("EMBED table of rank 0")
    n_ids: int = math.prod(ids)
    if n_ids * math.prod(table[1:]) != math.prod(outs[0].stored):
        raise _Reject("EMBED rows do not fill the output")
    rows = ins[1].every  # whole(table)
    if not rows.is_empty and n_ids:
        rows = Region(rows.boxes, exact=False, note="EMBED reads the table rows its ids select at run time")
    reads = [ins[0].every, rows if n_ids else EMPTY, *[EMPTY] * (len(ins) - 2)]
    return reads, _only_first(outs, outs[0].every)


def _kv_append(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    pos = _need(params, "pos")
    cache, new = outs[0].stored, math.prod(ins[0].stored)
    if len(cache) not in (3, 4):
        raise _Reject("KV_APPEND cache rank")
    row = cache[-2] * cache[-1]
    if len(cache) == 4:
        count = 1
        if new != cache[0] * row:
            raise _Reject("KV_APPEND new is not one row per sequence")
    else:
        if row == 0 or new % row:
            raise _Reject("KV_APPEND new is not whole rows")
        count = new // row
    if pos < 0 or pos + count > cache[-3]:
        raise _Reject("KV_APPEND rows outside the cache")
    return _full(ins, 1), _only_first(outs, along(cache, -3, pos, pos + count))


def _rope(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    x, n_pos = ins[0].stored, math.prod(ins[1].stored)
    hd = _need(params, "head_dim")
    if hd <= 0 or hd % 2 or len(x) not in (2, 3) or x[-1] != hd:
        raise _Reject("ROPE shapes")
    slabs = 1 if len(x) == 2 else x[0]
    if n_pos < 1 or (len(x) == 3 and n_pos != slabs):
        raise _Reject("ROPE positions")
    positions = Region(tuple(flat_range(ins[1].stored, 0, slabs)))
    return [ins[0].every, positions, *[EMPTY] * (len(ins) - 2)], _only_first(outs, outs[0].every)


def _attention(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 3, 1)
    q, kc, vc = ins[0].stored, ins[1].stored, ins[2].stored
    hd = _need(params, "head_dim")
    n_heads = _param(params, "n_heads", lambda: q[-2] if len(q) >= 2 else 1)
    n_kv = _param(params, "n_kv_heads", n_heads)
    if n_kv <= 0 or n_heads % n_kv or len(kc) not in (3, 4) or kc[-2] * n_kv == 0 or len(vc) != len(kc):
        raise _Reject("ATTENTION_TILE heads")
    start = _param(params, "kv_start", 0)
    length = _param(params, "kv_len", lambda: kc[-3])
    for cache in (kc, vc):
        if start < 0 or start + max(length, 0) > cache[-3]:
            raise _Reject("attention window outside the cache")
    batched = len(kc) == 4
    lead = (kc[0],) if batched else ()
    if math.prod(q) != math.prod(lead) * n_heads * hd or kc[-1] != hd or vc[-1] != hd:
        raise _Reject("ATTENTION_TILE q does not match the heads")
    if kc[-2] not in (1, n_kv) or vc[-2] not in (1, n_kv) or (batched and kc[0] != vc[0]):
        raise _Reject("ATTENTION_TILE kv heads")
    partial = not batched and _param(params, "flags", 0) & _PARTIAL_WRITE
    result = (n_heads, hd + 2) if partial else (*lead, n_heads, hd)
    _storable(result, outs[0].stored)
    writes = _only_first(outs, outs[0].every)
    if length <= 0:
        return [EMPTY] * len(ins), writes
    window = [along(kc, -3, start, start + length), along(vc, -3, start, start + length)]
    return [ins[0].every, *window, *[EMPTY] * (len(ins) - 3)], writes


def _combine(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    first = ins[0].stored
    hd = _param(params, "head_dim", lambda: first[-1] - 2 if first else 0)
    if hd <= 0 or math.prod(first) % (hd + 2):
        raise _Reject("ATTENTION_COMBINE partial rows")
    n_heads = _param(params, "n_heads", lambda: math.prod(first) // (hd + 2))
    if any(math.prod(op.stored) != n_heads * (hd + 2) for op in ins):
        raise _Reject("ATTENTION_COMBINE partials")
    _storable((n_heads, hd), outs[0].stored)
    return _full(ins, len(ins)), _only_first(outs, outs[0].every)


def _group_cols(table: Operand, rows: tuple[int, ...], k: int, group: int, pairs: bool = False) -> Region:
    """Columns of a scales/zeros table (viewed ``[*rows, -1]``, or ``[*rows, -1, 2]`` for the
    (scale, offset) ``pairs`` of the affine form) that ``expand_groups`` reads."""
    n_rows, numel, per = math.prod(rows), math.prod(table.stored), 2 if pairs else 1
    if n_rows == 0 or numel % (n_rows * per):
        raise _Reject("scales are not whole rows")
    width = numel // n_rows
    if width == 0 and k > 0:
        raise _Reject("empty scales")
    return row_prefix(table.stored, n_rows, width, per * -(-k // group))


def _affine(params: Mapping[str, Any]) -> bool:
    """Whether ``flags`` selects the affine (scale, offset) table of a quantized operand."""
    return bool(_param(params, "flags", 0) & _AFFINE)


def _dequant(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    q = ins[0].stored
    if not q:
        raise _Reject("DEQUANT q of rank 0")
    rows, out_n = q[:-1], math.prod(outs[0].stored)
    n_rows = math.prod(rows)
    if n_rows == 0 or out_n % n_rows:
        raise _Reject("DEQUANT output is not whole rows of q")
    k = out_n // n_rows
    group = _param(params, "group", k)
    if group <= 0:
        raise _Reject("group must be positive")
    qdtype = _param(params, "qdtype", 0)
    packed = ins[0].uint8 and q[-1] == (k + 1) // 2
    if qdtype == _I4 and packed:
        q_read = ins[0].every
    else:
        if q[-1] < k:
            raise _Reject("q holds fewer than K columns")
        q_read = along(q, -1, 0, k)
    affine = _affine(params)
    if affine and len(ins) > 2:
        raise _Reject("an affine table takes no zeros")
    reads = [q_read, _group_cols(ins[1], rows, k, group, affine)]
    if len(ins) > 2:
        reads.append(_group_cols(ins[2], rows, k, group))
    reads += [EMPTY] * (len(ins) - len(reads))
    return reads, _only_first(outs, outs[0].every)


def _tile_rows(op: Operand, n_off: int, n_tile: int, what: str, rank: int = 2) -> Region:
    """Rows ``[n_off, n_off+n_tile)`` of a weight-like operand of ``rank`` dims, all the rest."""
    if len(op.stored) != rank or n_off < 0 or n_off + n_tile > op.stored[0] or n_tile < 0:
        raise _Reject(f"tile rows outside {what}")
    return along(op.stored, 0, n_off, n_off + n_tile)


def _linear(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    """GEMV_TILE and GEMM_TILE: ``x @ W[n_off:n_off+N_tile].T`` for every row of x (spec §7)."""
    _arity(ins, outs, 2, 1)
    x, out = ins[0].stored, outs[0].stored
    n_off = _param(params, "n_off", 0)
    k_x = _dim(x, -1)
    qdtype = _param(params, "qdtype", 0)
    if qdtype in _QUANTIZED and len(ins) >= 3:
        n_tile = _param(params, "N_tile", lambda: _dim(ins[2].stored, 0))
        k = _param(params, "K", k_x)
        group = _param(params, "group", k)
        if group <= 0 or k != k_x:
            raise _Reject("quantized tile K")
        qw, affine = ins[1].stored, _affine(params)
        tables_in = ins[2:4]
        if affine and (len(ins) > 3 or len(ins[2].stored) != 3 or ins[2].stored[-1] != 2):
            raise _Reject("an affine table is [N, n_groups, 2] and takes no zeros")
        if len(qw) != 2 or (not affine and any(len(op.stored) != 2 for op in tables_in)):
            raise _Reject("quantized operands are not 2-D")
        q_cols = -(-k // 2) if qdtype == _I4 else k
        if (qw[-1] * 2 if qdtype == _I4 else qw[-1]) < k:
            raise _Reject("quantized W holds fewer than K columns")
        rank = 3 if affine else 2
        tables = [_tile_rows(op, n_off, n_tile, "scales", rank) for op in tables_in]
        groups = [_group_cols(op, (op.stored[0],), k, group, affine) for op in tables_in]
        reads = [
            ins[0].every,
            _intersect(_tile_rows(ins[1], n_off, n_tile, "W"), along(qw, -1, 0, q_cols)),
            *(_intersect(t, g) for t, g in zip(tables, groups, strict=True)),
        ]
    else:
        n_tile = _param(params, "N_tile", lambda: _dim(ins[1].stored, 0))
        w = _tile_rows(ins[1], n_off, n_tile, "W")
        if ins[1].stored[1] != k_x:
            raise _Reject("x does not match W")
        reads = [ins[0].every, w]
        if len(ins) > 2:
            bias = ins[2].stored
            if len(bias) != 1 or n_off + n_tile > bias[0]:
                raise _Reject("bias shape")
            reads.append(along(bias, 0, n_off, n_off + n_tile))
    if n_off < 0 or n_off + n_tile > _dim(out, -1):
        raise _Reject("tile columns outside the output")
    if x[:-1] != out[:-1]:  # equal shapes are storable
        _storable((*x[:-1], n_tile), (*out[:-1], n_tile))
    if len(ins) > len(reads):
        reads += [EMPTY] * (len(ins) - len(reads))
    return reads, _only_first(outs, along(out, -1, n_off, n_off + n_tile))


def _intersect(a: Region, b: Region) -> Region:
    if a.boxes is None or b.boxes is None:
        return a if b.boxes is None else b
    boxes = tuple(
        tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(p, q, strict=True))
        for p in a.boxes
        for q in b.boxes
        if boxes_meet(p, q)
    )
    return Region(boxes, a.exact and b.exact, a.note or b.note)


_RULES: dict[InstructionKind, Rule] = {
    InstructionKind.NOP: _nop,
    InstructionKind.COPY: _copy,
    InstructionKind.EMBED: _embed,
    InstructionKind.KV_APPEND: _kv_append,
    InstructionKind.RMSNORM: _elementwise(2),
    InstructionKind.LAYERNORM: _layernorm,
    InstructionKind.GEMV_TILE: _linear,
    InstructionKind.GEMM_TILE: _linear,
    InstructionKind.ATTENTION_TILE: _attention,
    InstructionKind.ATTENTION_COMBINE: _combine,
    InstructionKind.ROPE: _rope,
    InstructionKind.SILU_MUL: _elementwise(2),
    InstructionKind.GELU: _elementwise(1),
    InstructionKind.ADD: _elementwise(2),
    InstructionKind.MUL: _mul,
    InstructionKind.SOFTMAX: _softmax,
    InstructionKind.ALLREDUCE_SHARD: _allreduce,
    InstructionKind.SAMPLE_ARGMAX: _argmax,
    InstructionKind.DEQUANT: _dequant,
}


# -- FUSED -----------------------------------------------------------------------------------

Taint = dict[int, Region]
"""Task input position → the region of it that flowed into a value."""


def _merge(a: Taint, b: Taint) -> Taint:
    out = dict(a)
    for k, region in b.items():
        out[k] = union([out[k], region]) if k in out else region
    return out


def _opcode(value: Any) -> InstructionKind:
    try:
        return opcode_of(value)
    except ValueError as exc:
        raise _Reject(str(exc)) from exc


def _step_ref(ref: Any, n_inputs: int, scratch: Mapping[int, Operand]) -> tuple[str, int]:
    if isinstance(ref, Mapping) and len(ref) == 1:
        ((key, idx),) = ref.items()
        if key == "in" and type(idx) is int and 0 <= idx < n_inputs:
            return key, idx
        if key == "s" and type(idx) is int and idx in scratch:
            return key, idx
    raise _Reject(f"bad recipe arg {ref!r}")


def _step_out(value: Any) -> int:
    if value == "final" or (type(value) is int and value >= -1):
        return -1 if value == "final" else value
    raise _Reject(f"bad recipe out {value!r}")


def _new_scratch(step: Mapping[str, Any], args: list[Operand]) -> Operand:
    shape = step.get("out_shape")
    if shape is None:
        if not args:
            raise _Reject("a scratch without out_shape needs an argument")
        return Operand.scratch(args[0].stored, args[0].uint8 and "out_dtype" not in step)
    if not isinstance(shape, (list, tuple)):
        raise _Reject("bad out_shape")
    dims = tuple(_int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise _Reject("bad out_shape")
    uint8 = "out_dtype" not in step and bool(args) and args[0].uint8
    return Operand.scratch(dims, uint8)


def _fused(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    """FUSED: each step's footprint, with task inputs traced through scratch (spec §7)."""
    _arity(ins, outs, 1, 1)
    recipe = params.get("recipe") if "recipe" in params else None
    steps = recipe.get("steps") if isinstance(recipe, Mapping) else None
    if not isinstance(steps, list) or not steps:
        raise _Reject("FUSED needs a recipe with steps")
    scratch: dict[int, Operand] = {}
    taint: dict[int, Taint] = {}
    finals: list[tuple[Region, Taint]] = []
    exact = True
    for step in steps:
        if not isinstance(step, Mapping) or not isinstance(step.get("params", {}), Mapping):
            raise _Reject("a recipe step must be an object with object params")
        op = _opcode(step.get("op"))
        if op is InstructionKind.FUSED:
            raise _Reject("nested FUSED")
        out_dtype = step.get("out_dtype", "float32")
        if not isinstance(out_dtype, str) or out_dtype not in RECIPE_DTYPES:
            raise _Reject("bad out_dtype")
        raw_args = step.get("args", [])
        if not isinstance(raw_args, list):
            raise _Reject("args must be a list")
        refs = [_step_ref(r, len(ins), scratch) for r in raw_args]
        args = [ins[i] if key == "in" else scratch[i] for key, i in refs]
        out = _step_out(step.get("out", "final"))
        target = outs[0] if out == -1 else scratch.get(out) or _new_scratch(step, args)
        reads, writes = _RULES[op](step.get("params", {}), args, [target])
        if all(w.is_empty for w in writes):
            reads = [EMPTY] * len(reads)
        flow: Taint = {}
        for (key, i), region, arg in zip(refs, reads, args, strict=True):
            if region.is_empty:
                continue
            if key == "in":
                flow = _merge(flow, {i: region})
            else:
                exact = exact and region == whole(arg.stored)
                flow = _merge(flow, taint.get(i, {}))
        if out == -1:
            finals.append((writes[0], flow))
        else:
            overwritten = writes[0] == whole(target.stored)
            taint[out] = flow if overwritten else _merge(taint.get(out, {}), flow)
            scratch[out] = target
    if not finals:
        raise _Reject("no step writes 'final'")
    live: Taint = {}
    later: list[Region] = []
    for written, flow in reversed(finals):
        if written.boxes is None or uncovered(written, later, outs[0].stored):
            live = _merge(live, flow)
        later.append(written)
    note = "" if exact else "a FUSED step reads part of a scratch: its inputs are traced whole"
    read_list = [
        Region(live[i].boxes, exact=exact and live[i].exact, note=note) if i in live else EMPTY
        for i in range(len(ins))
    ]
    return read_list, _only_first(outs, union([w for w, _ in finals]))


_RULES[InstructionKind.FUSED] = _fused


# -- the footprint of a task -----------------------------------------------------------------


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


def op_footprint(
    op: InstructionKind, params: Mapping[str, Any], ins: Sequence[Operand], outs: Sequence[Operand]
) -> tuple[list[Region], list[Region]]:
    """Read region per input position and write region per output position, in **stored**
    coordinates; on parameters or shapes the semantics reject, every operand whole (inexact)."""
    try:
        reads, writes = _RULES[op](
            params, ins if type(ins) is list else list(ins), outs if type(outs) is list else list(outs)
        )
    except (_Reject, ArithmeticError, IndexError) as exc:
        why = str(exc) or type(exc).__name__
        note = f"{op.name}: the semantics reject this task ({why})"
        return (
            [Region(whole(o.stored).boxes, exact=False, note=note) for o in ins],
            [Region(whole(o.stored).boxes, exact=False, note=note) for o in outs],
        )
    for w in writes:  # a loop, not a generator: this runs once per distinct task
        if w.boxes is None or w.boxes:  # not w.is_empty
            return reads, writes
    return [EMPTY] * len(reads), writes


def _logical(region: Region, operand: Operand) -> Region:
    """Stored coordinates → logical ones (packed I4: byte ``j`` holds columns ``2j, 2j+1``)."""
    if region.boxes is None or operand.stored == operand.logical:
        return region
    k = operand.logical[-1]
    boxes = tuple((*b[:-1], (2 * b[-1][0], min(2 * b[-1][1], k))) for b in region.boxes)
    return Region(boxes, region.exact, region.note)


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
    (:func:`_keyed_task_regions`, FUSED recipes included), which merges no two params that the
    items key keeps apart; a task with two inputs and one output is keyed there by the flat
    ``(opcode, params key, input code, input code, output code)`` (five items: never equal to a
    four-item key). The batch by rule keys (:func:`_rule_keyed_task_regions`) keys by
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


TaskRegions = tuple[Sequence[int], list[Region], Sequence[int], list[Region]]
"""``(input ids, read region per input, output ids, write region per output)`` of one task."""


def task_regions(task: Any, buffers: Mapping[int, Buffer], memo: Memo) -> TaskRegions:
    """Per operand position, the regions of :func:`task_footprint` (the validator's fast path)."""
    op, params = getattr(task, "op", None), getattr(task, "params", None)
    ids_in, codes_in = _operands(getattr(task, "inputs", None), buffers, memo)
    ids_out, codes_out = _operands(getattr(task, "outputs", None), buffers, memo)
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
        cached = _op_regions(memo, key, op, params, codes_in, codes_out)
    return ids_in, cached[0], ids_out, cached[1]


KEYED_MIN_TASKS = 64
"""From this many tasks the validator passes :func:`all_task_regions` the tasks' columns (on
fewer, building them costs more than the params keys save: about even at 60 lowered tasks)."""


def all_task_regions(
    tasks: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    columns: TaskColumns | None = None,
    well_formed: bool = False,
    rule_keys: Sequence[Any] | None = None,
    kinds: Mapping[int, int] | None = None,
) -> list[TaskRegions | None]:
    """:func:`task_regions` of every task, in one pass (the validator's batch path).

    ``inputs[pos]`` (``outputs[pos]``) may be the task's own operand list itself (the same
    object) when the caller has checked that it holds only int ids of ``buffers``; the ids are
    then not checked again and the list is returned as the task's ids. A task whose lists are
    not passed that way, whose opcode or params are not plain, or that names a buffer whose
    operand is unusable takes :func:`task_regions`. An entry is None where that raised (the
    caller may then ask :func:`task_regions` again, where the error belongs).

    ``columns``, the tasks' :class:`~amkspec.ir.columns.TaskColumns` when the caller has
    them (which exist only for a list of plain Task records: not tested again), key each task by
    its exact params key (:func:`_keyed_task_regions`). ``well_formed``:
    as for :meth:`Memo.codes_of`. ``rule_keys``, the tasks' keys of
    :func:`~amkspec.proofs.rule_keys.rule_keys` (given with ``columns`` by the validator, which
    shares them with memory safety), key each task instead (:func:`_rule_keyed_task_regions`)
    where every buffer is well formed (then a known operand always has a kind: no key slot is
    None but past a task's last operand). ``kinds``: the buffers'
    :func:`~amkspec.proofs.rule_keys.operand_kinds`, when the caller has them (for
    :meth:`Memo.codes_of`).
    """
    code = memo.codes_of(buffers, well_formed, kinds)
    if columns is None and not {*map(type, tasks)} <= {Task}:  # odd records (columns: none): each its own way
        found: list[TaskRegions | None] = []
        for task in tasks:
            try:
                found.append(task_regions(task, buffers, memo))
            except Exception:  # noqa: BLE001 - left None: task_regions raises it again where it is asked
                found.append(None)
        return found
    own: tuple[list[Any], list[Any], list[Any], Sequence[Any], list[Any]]
    if columns is None:
        ops, params = [t.op for t in tasks], [t.params for t in tasks]
        own = ([t.inputs for t in tasks], [t.outputs for t in tasks], ops, _items_keys(ops, params), params)
    elif rule_keys is not None and well_formed and columns.plain_ops:
        own_lists, params = (columns.inputs, columns.outputs), columns.params
        rows = zip(inputs, outputs, *own_lists, columns.ops, rule_keys, params, tasks, strict=True)
        return _rule_keyed_task_regions(rows, buffers, memo, code)
    else:
        keys: Sequence[Any] = columns.param_keys
        if not columns.plain_ops:
            plain = [type(op) is InstructionKind for op in columns.ops]
            keys = [k if fine else None for fine, k in zip(plain, keys, strict=True)]
        own = (columns.inputs, columns.outputs, columns.ops, keys, columns.params)
    return _keyed_task_regions(tasks, inputs, outputs, own, buffers, memo, code)


def _items_keys(ops: list[Any], params: list[Any]) -> list[tuple[Any, ...] | None]:
    """The params key of each task when the caller has no exact ones: its params' items (equal
    values such as ``1`` and ``1.0`` share it, and so do their footprints: every rule reads a
    non-recipe param through ``int()``), None where the opcode or the params are not plain."""
    return [
        tuple(p.items()) if type(op) is InstructionKind and type(p) is dict else None
        for op, p in zip(ops, params, strict=True)
    ]


def _keyed_task_regions(
    tasks: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    own: tuple[list[Any], list[Any], list[Any], Sequence[Any], list[Any]],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    code: Mapping[int, int | None],
) -> list[TaskRegions | None]:
    """:func:`all_task_regions` of plain task records over their columns ``own``: each task's
    inputs, outputs, opcode, params key and params.

    A task's key is ``(opcode, params key, input codes, output codes)``, flattened to five items
    for two inputs and one output (most tasks: no tuples of codes to build). The params key is the
    exact :func:`~amkspec.ir.columns.param_key` (equal keys mean equal params of equal types
    in equal order; a bytes is never equal to :func:`task_regions`' own keys) or, without it, the
    params' items (:func:`_items_keys`, :func:`task_regions`' own key), so a hit is the
    :func:`op_footprint` the task itself would get. A task without a params key, or that misses
    with params that are not a dict or with an unusable operand, takes :func:`task_regions`; an
    unhashable key (a FUSED recipe's items) leaves the entry None.
    """
    get = memo.ops.get
    found: list[TaskRegions | None] = []
    add = found.append
    rows = zip(inputs, outputs, *own, tasks, strict=True)
    for ins, outs, own_ins, own_outs, op, params_key, params, task in rows:
        try:
            if params_key is not None:
                key: tuple[Any, ...]
                codes_in: tuple[int | None, ...] | None
                codes_out: tuple[int | None, ...] | None
                if ins is own_ins and outs is own_outs and len(ins) == 2 and len(outs) == 1:
                    # most tasks (x and W, a and b): one flat key, no tuple of codes unless it misses
                    key = (op, params_key, code[ins[0]], code[ins[1]], code[outs[0]])
                    cached = get(key)
                    if cached is not None:
                        add((ins, cached[0], outs, cached[1]))
                        continue
                    codes_in, codes_out = key[2:4], key[4:]
                else:
                    if ins is own_ins:
                        # the codes without a comprehension: most tasks have one to three operands
                        codes_in = (code[ins[0]],) if len(ins) == 1 else tuple([code[b] for b in ins])
                    else:  # e.g. a buffer named twice (the caller's list names it once)
                        ins, codes_in = _own_operands(own_ins, code, buffers, memo)
                    if outs is own_outs:
                        codes_out = (code[outs[0]],) if len(outs) == 1 else tuple([code[b] for b in outs])
                    else:
                        outs, codes_out = _own_operands(own_outs, code, buffers, memo)
                    key = (op, params_key, codes_in, codes_out)
                    cached = get(key)
                    if cached is not None:
                        add((ins, cached[0], outs, cached[1]))
                        continue
                if (
                    type(params) is dict
                    and codes_in is not None
                    and codes_out is not None
                    and None not in codes_in
                    and None not in codes_out
                ):
                    cached = _op_regions(memo, key, op, params, codes_in, codes_out)  # type: ignore[arg-type]
                    add((ins, cached[0], outs, cached[1]))
                    continue
            add(task_regions(task, buffers, memo))
        except Exception:  # noqa: BLE001 - left None: task_regions raises it again where it is asked
            add(None)
    return found


def _rule_keyed_task_regions(
    rows: Iterable[tuple[Any, Any, Any, Any, Any, Any, Any, Any]],
    buffers: Mapping[int, Buffer],
    memo: Memo,
    code: Mapping[int, int | None],
) -> list[TaskRegions | None]:
    """:func:`all_task_regions` of plain task records keyed by their rule keys: each row holds a
    task's checked inputs and outputs, its own ones, its opcode, rule key, params and the task.

    Equal rule keys mean equal opcodes, exact params and operands of equal shapes and dtypes
    (:func:`~amkspec.proofs.rule_keys.rule_keys`), hence equal :func:`op_footprint` (a rule key
    is never equal to :func:`task_regions`' own keys, whose second item is a tuple, not bytes).
    A key is used only where every operand of the task's own lists is a known buffer with a
    usable operand (every operand then has a kind, so the key fixes the operand counts): the
    checked lists are the task's own (every id known, none repeated), or its own lists are
    :func:`_own_operands` with a code for each (e.g. SILU_MUL's ``[gate, gate]``: the rules read
    operands, not which ones are one buffer); any other task, one without a key, and a miss whose
    params are not a dict take :func:`task_regions`; an entry is None where that raised.
    """
    get = memo.ops.get
    found: list[TaskRegions | None] = []
    add = found.append
    for ins, outs, own_ins, own_outs, op, key, params, task in rows:
        try:
            if key is not None:
                codes_in = codes_out = None  # of the task's own lists, when they are not the checked ones
                if ins is not own_ins or outs is not own_outs:
                    ins, codes_in = _own_operands(own_ins, code, buffers, memo)
                    outs, codes_out = _own_operands(own_outs, code, buffers, memo)
                    if codes_in is None or codes_out is None or None in codes_in or None in codes_out:
                        add(task_regions(task, buffers, memo))
                        continue
                cached = get(key)
                if cached is None and type(params) is dict:
                    if codes_in is None or codes_out is None:
                        codes_in, codes_out = tuple([code[b] for b in ins]), tuple([code[b] for b in outs])
                    if None not in codes_in and None not in codes_out:
                        cached = _op_regions(memo, key, op, params, codes_in, codes_out)  # type: ignore[arg-type]
                if cached is not None:
                    add((ins, cached[0], outs, cached[1]))
                    continue
            add(task_regions(task, buffers, memo))
        except Exception:  # noqa: BLE001 - left None: task_regions raises it again where it is asked
            add(None)
    return found


def _own_operands(
    value: Any, code: Mapping[int, int | None], buffers: Mapping[int, Buffer], memo: Memo
) -> tuple[tuple[int, ...], tuple[int | None, ...] | None]:
    """:func:`_operands` of a task's own operand list, where ``code`` holds the code of every
    buffer of ``buffers``: a list of exact ints gives its ids and their codes (None for an id
    that is not a buffer's, as for an unusable one), anything else takes :func:`_operands`."""
    if type(value) is list:
        if len(value) == 2:  # e.g. SILU_MUL's [gate, gate]: no set, no map
            first, second = value
            if type(first) is int and type(second) is int:
                return (first, second), (code.get(first), code.get(second))
        elif {*map(type, value)} <= {int}:
            return tuple(value), tuple(map(code.get, value))
    return _operands(value, buffers, memo)


def _op_regions(
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


def _operands(
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
