"""The footprint primitives against their definitions, element by element (spec §3.3).

``whole`` and ``along`` have rank-1/rank-2 paths (``along`` also rank 3) that build the box
directly; these tests enumerate the elements of every small shape and compare, on every rank and
axis, including empty dimensions, negative axes and ranges that stick out of the buffer.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import Operand, Region, along, whole
from amkspec.ir import DType

SMALL = [shape for rank in range(4) for shape in itertools.product(range(4), repeat=rank)]
"""Every shape of rank 0-3 with dims 0-3."""
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


def elements(region: Region, shape: tuple[int, ...]) -> set[tuple[int, ...]]:
    """The indices of ``shape`` the region's boxes contain (each box non-empty and inside ``shape``)."""
    assert region.boxes is not None
    for box in region.boxes:
        assert len(box) == len(shape)
        assert all(0 <= lo < hi <= dim for (lo, hi), dim in zip(box, shape, strict=True))
    return {
        idx
        for idx in itertools.product(*map(range, shape))
        if any(all(lo <= i < hi for i, (lo, hi) in zip(idx, box, strict=True)) for box in region.boxes)
    }


def test_whole_is_every_element() -> None:
    for shape in SMALL:
        region = whole(shape)
        assert region.exact and not region.note
        assert elements(region, shape) == set(itertools.product(*map(range, shape)))
        assert region.is_empty == (0 in shape)  # an empty buffer has no box at all


def test_along_is_the_slab() -> None:
    """Exhaustive over SMALL, every axis (negative too) and ranges inside, across and outside."""
    for shape in SMALL:
        cells = list(itertools.product(*map(range, shape)))
        for axis, lo, hi in itertools.product(
            range(-len(shape), max(len(shape), 1)), range(-1, 5), range(-1, 6)
        ):
            region = along(shape, axis, lo, hi)
            if not shape:
                assert region == whole(shape)
                continue
            a = axis % len(shape)
            want = {idx for idx in cells if lo <= idx[a] < hi}
            assert elements(region, shape) == want, (shape, axis, lo, hi)
            assert region.is_empty == (not want)  # no box with an empty interval
            assert region.boxes is not None and len(region.boxes) <= 1


@given(shapes, st.sampled_from(list(DType)))
def test_operand_every_is_whole_of_stored(shape: tuple[int, ...], dtype: DType) -> None:
    operand = Operand.of_shape(shape, dtype)
    assert operand.every == whole(operand.stored)
    assert operand.every is operand.every  # built once
    assert operand == Operand.of_shape(shape, dtype)  # the cached region is not part of equality
