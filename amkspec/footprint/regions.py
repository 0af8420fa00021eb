"""Regions: unions of boxes over a buffer's logical shape, and the maths the footprint checks
need on them (union, subtraction, coverage, the first overlap) (spec §3.3). Pure Python."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import attrs

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


def intersect(a: Region, b: Region) -> Region:
    if a.boxes is None or b.boxes is None:
        return a if b.boxes is None else b
    boxes = tuple(
        tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(p, q, strict=True))
        for p in a.boxes
        for q in b.boxes
        if boxes_meet(p, q)
    )
    return Region(boxes, a.exact and b.exact, a.note or b.note)
