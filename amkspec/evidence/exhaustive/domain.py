"""The domain of the exhaustive small-scope check: every program of a bounded shape, one
representative per symmetry class, enumerated by rank so that any range can be checked on its own
(proofs guide, "Exhaustive check").

**The domain** is the synchronisation skeleton × an abstract footprint per task × buffer kinds:

* buffers: ``x`` (IO_INPUT ``[1, 2]``, a source nobody writes), ``W`` (WEIGHT ``[2, 2]``, the tile
  weights) and ``buffers`` data buffers ``[1, 2]``, each ACTIVATION, IO_OUTPUT or WEIGHT (a
  read-only kind); with ``pages`` the first two data buffers may share a page (both ACTIVATION);
* counters: ``counters``, ``init`` 0 (with ``init``: 0 or 1);
* a task: reads one buffer whole (``x`` or a data buffer), writes one data buffer whole (COPY) or
  one column of it (GEMV_TILE over ``W``, ``n_off`` 0 or 1), signals one counter, and waits on
  each counter with a threshold 0 (no wait) to ``threshold``; with ``sm`` it runs on SM 0 or 1,
  and the task list order matters.

**Symmetry.** Both ``validate()`` and the model checker see a program only through which tasks
touch which elements of which buffer and how tasks wait and signal, so these maps change neither
the codes nor the findings: renaming the data buffers, renaming the counters, mirroring the two
columns (``W`` and ``x`` are never written, so which row of ``W`` a tile reads is invisible),
reordering the task list (without SMs: nothing depends on it) or, with SMs, interleaving the two
SM queues differently and swapping the SMs (only the order within one queue matters). One
representative per class is checked: without SMs a multiset of task shapes, with SMs a pair of
queues; of each class the least under those maps. The class counts come from Burnside's lemma
(:meth:`Domain.size`).

**Ranks.** The *raw task lists* of ``n`` tasks (multisets of shapes, or pairs of queues) are
numbered 0, 1, … in lexicographic order (:meth:`Domain.raw_count`); :meth:`Domain.programs` yields
the representatives among the raw lists of ranks ``[start, stop)`` without enumerating the ranks
before ``start``, so shards of ranks are independent jobs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import attrs

from amkspec.ir import (
    TARGETS,
    Buffer,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    Page,
    PageAllocation,
    Task,
    Wait,
)

TARGET = TARGETS["h100"]
KINDS = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.WEIGHT)


LIMITS = {"tasks": 12, "buffers": 3, "counters": 3, "threshold": 3}
"""The largest value of each size of a :class:`Bound` (the model checker's reach is about 12 tasks;
the symmetry tables grow with the factorials of buffers and counters)."""


def _size(bound: Bound, attribute: attrs.Attribute[int], value: int) -> None:
    top = LIMITS[attribute.name]
    if not (isinstance(value, int) and 1 <= value <= top):
        raise ValueError(f"{attribute.name} must be an integer from 1 to {top}, not {value!r}")


def _paged(bound: Bound, attribute: attrs.Attribute[bool], value: bool) -> None:
    if value and bound.buffers != 2:
        raise ValueError("pages needs exactly 2 data buffers")


@attrs.frozen
class Bound:
    """The domain (see the module docstring); ValueError for sizes outside :data:`LIMITS`."""

    tasks: int = attrs.field(default=4, validator=_size)
    buffers: int = attrs.field(default=2, validator=_size)
    counters: int = attrs.field(default=2, validator=_size)
    threshold: int = attrs.field(default=2, validator=_size)
    init: bool = False
    sm: bool = False
    pages: bool = attrs.field(default=False, validator=_paged)


Shape = tuple[int, int, int, int, tuple[int, ...]]
"""A task without its SM, the tuple (source, written data buffer, column, out_counter, thresholds):
the source is -1 for x or a data buffer, the column -1 for the whole buffer or 0 or 1 for a tile,
and a threshold per counter is 0 for no wait."""

Head = tuple[tuple[int, ...], tuple[int, ...], bool]
"""(kind index per data buffer, init per counter, whether b0 and b1 share a page)."""

TaskShape = tuple[int, int, int, int, tuple[int, ...], int]
"""A :data:`Shape` plus its SM (-1: none)."""

Program = tuple[tuple[int, ...], tuple[int, ...], bool, tuple[TaskShape, ...]]
"""The tuple (kinds, inits, paged, tasks) that :func:`build` turns into a MegakernelProgram."""

Queues = tuple[tuple[int, ...], tuple[int, ...]]
"""A raw task list: shape indices on SM 0 and SM 1 (without SMs: a sorted multiset, and ``()``)."""

Symmetry = tuple[tuple[int, ...], tuple[int, ...], bool]
"""(data buffer permutation, counter permutation, mirror the columns)."""


def _rename_shape(s: Shape, g: Symmetry) -> Shape:
    bp, cp, mirror = g
    src, dst, col, oc, ths = s
    new_ths = [0] * len(ths)
    for c, t in enumerate(ths):
        new_ths[cp[c]] = t
    new_col = 1 - col if mirror and col >= 0 else col
    return (bp[src] if src >= 0 else -1, bp[dst], new_col, cp[oc], tuple(new_ths))


def _rename_head(h: Head, g: Symmetry) -> Head:
    bp, cp, _ = g
    kinds, inits, paged = h
    new_kinds, new_inits = [0] * len(kinds), [0] * len(inits)
    for b, k in enumerate(kinds):
        new_kinds[bp[b]] = k
    for c, i in enumerate(inits):
        new_inits[cp[c]] = i
    return (tuple(new_kinds), tuple(new_inits), paged)


class Domain:
    """The shapes, heads and symmetries of a :class:`Bound`, shapes addressed by index."""

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        nb, nc = bound.buffers, bound.counters
        self.shapes: list[Shape] = sorted(
            itertools.product(
                range(-1, nb),
                range(nb),
                (-1, 0, 1),
                range(nc),
                itertools.product(range(bound.threshold + 1), repeat=nc),
            )
        )
        index = {s: i for i, s in enumerate(self.shapes)}
        self.heads: list[Head] = [
            (kinds, inits, paged)
            for kinds in itertools.product(range(len(KINDS)), repeat=nb)
            for inits in itertools.product((0, 1) if bound.init else (0,), repeat=nc)
            for paged in ((False, True) if bound.pages else (False,))
            if not paged or kinds[0] == kinds[1] == 0
        ]
        self.group: list[Symmetry] = [
            (bp, cp, mirror)
            for bp in itertools.permutations(range(nb))
            for cp in itertools.permutations(range(nc))
            for mirror in (False, True)
        ]
        self.perm = [tuple(index[_rename_shape(s, g)] for s in self.shapes) for g in self.group]
        """Per symmetry: the index of each shape's image."""
        canonical = [h for h in self.heads if all(h <= _rename_head(h, g) for g in self.group)]
        by_stab: dict[tuple[int, ...], list[Head]] = {}
        for h in canonical:
            stab = tuple(n for n, g in enumerate(self.group) if _rename_head(h, g) == h)
            by_stab.setdefault(stab, []).append(h)
        self.classes: list[tuple[list[tuple[int, ...]], list[Head]]] = [
            ([self.perm[n] for n in stab], heads) for stab, heads in by_stab.items()
        ]
        """(permutations of the stabiliser, canonical heads it stabilises): a program with a
        canonical head is canonical when no symmetry fixing the head makes its tasks smaller."""

    # -- counting ---------------------------------------------------------------------------------

    def size(self, n: int) -> tuple[int, int]:
        """(programs of ``n`` tasks, symmetry classes among them), by Burnside's lemma."""
        s, heads = len(self.shapes), len(self.heads)
        if not self.bound.sm:
            raw = heads * math.comb(s + n - 1, n)
            total = sum(
                self._fixed_heads(g) * _fixed_multisets(p, n)
                for g, p in zip(self.group, self.perm, strict=True)
            )
            return raw, total // len(self.group)
        raw = heads * (n + 1) * s**n
        total = 0
        for g, p in zip(self.group, self.perm, strict=True):
            fixed = sum(1 for i in range(s) if p[i] == i)
            swapped = sum(1 for i in range(s) if p[p[i]] == i)
            total += self._fixed_heads(g) * ((n + 1) * fixed**n + (swapped ** (n // 2) if n % 2 == 0 else 0))
        return raw, total // (2 * len(self.group))

    def _fixed_heads(self, g: Symmetry) -> int:
        return sum(1 for h in self.heads if _rename_head(h, g) == h)

    # -- enumeration ------------------------------------------------------------------------------

    def raw_count(self, n: int) -> int:
        """Raw task lists of ``n`` tasks: multisets of shapes, or (with SMs) pairs of queues."""
        s = len(self.shapes)
        return (n + 1) * s**n if self.bound.sm else math.comb(s + n - 1, n)

    def programs(self, n: int, start: int = 0, stop: int | None = None) -> Iterator[Program]:
        """One program of ``n`` tasks per symmetry class: the representatives among the raw task
        lists of ranks ``[start, stop)`` (default: all of them)."""
        for q in self.queues(n, start, self.raw_count(n) if stop is None else stop):
            yield from self.representatives(q)

    def representatives(self, q: Queues) -> Iterator[Program]:
        """The programs of the raw task list ``q`` that represent their class (none, or one per
        canonical head that no symmetry fixing it makes ``q`` smaller under)."""
        for perms, heads in self.classes:
            if all(self._least(q, p) for p in perms):
                tasks = self._tasks(*q)
                for kinds, inits, paged in heads:
                    yield (kinds, inits, paged, tasks)

    def queues(self, n: int, start: int, stop: int) -> Iterator[Queues]:
        """The raw task lists of ``n`` tasks of ranks ``[start, stop)``, in rank order."""
        s = len(self.shapes)
        if start >= stop:
            return
        if not self.bound.sm:
            ms = _unrank_multiset(s, n, start)
            for _ in range(stop - start):
                yield ms, ()
                ms = _next_multiset(s, ms)
            return
        block = s**n
        for r in range(start, stop):
            k = n - r // block
            digits = _digits(r % block, s, n)
            yield digits[:k], digits[k:]

    def _least(self, q: Queues, p: Sequence[int]) -> bool:
        """Whether mapping the shapes by ``p`` (and, with SMs, swapping the SMs) leaves ``q`` no smaller."""
        a, b = tuple(p[i] for i in q[0]), tuple(p[i] for i in q[1])
        if not self.bound.sm:
            return tuple(sorted(a)) >= q[0]
        return (a, b) >= q and (b, a) >= q

    def _tasks(self, q0: tuple[int, ...], q1: tuple[int, ...]) -> tuple[TaskShape, ...]:
        if not self.bound.sm:
            return tuple((*self.shapes[i], -1) for i in q0)
        return tuple((*self.shapes[i], 0) for i in q0) + tuple((*self.shapes[i], 1) for i in q1)


def _unrank_multiset(s: int, n: int, r: int) -> tuple[int, ...]:
    """The multiset (a non-decreasing tuple) of ``n`` values below ``s`` of lexicographic rank ``r``."""
    out, low = [], 0
    for left in range(n - 1, -1, -1):
        v = low
        while r >= (count := math.comb(s - v + left - 1, left)):  # multisets of `left` values ≥ v
            r -= count
            v += 1
        out.append(v)
        low = v
    return tuple(out)


def _next_multiset(s: int, ms: tuple[int, ...]) -> tuple[int, ...]:
    """The lexicographic successor of the multiset ``ms`` (values below ``s``)."""
    i = len(ms) - 1
    while i >= 0 and ms[i] == s - 1:
        i -= 1
    if i < 0:
        return ms  # the last one: the caller never asks past it
    v = ms[i] + 1
    return ms[:i] + (v,) * (len(ms) - i)


def _digits(r: int, s: int, n: int) -> tuple[int, ...]:
    """``r`` written with ``n`` digits in base ``s``, most significant first."""
    out = [0] * n
    for i in range(n - 1, -1, -1):
        r, out[i] = divmod(r, s)
    return tuple(out)


def _fixed_multisets(p: Sequence[int], n: int) -> int:
    """Multisets of ``n`` shapes that the permutation ``p`` maps to themselves: the coefficient of
    z^n in the product over p's cycles of 1 / (1 - z^length)."""
    seen = [False] * len(p)
    ways = [1] + [0] * n
    for i in range(len(p)):
        if seen[i]:
            continue
        length, j = 0, i
        while not seen[j]:
            seen[j], j, length = True, p[j], length + 1
        for m in range(length, n + 1):
            ways[m] += ways[m - length]
    return ways[n]


def build(p: Program) -> MegakernelProgram:
    """The MegakernelProgram of a point of the domain, built as IR records."""
    kinds, inits, paged, tasks = p
    f32 = DType.F32
    buffers = [
        Buffer(0, "x", BufferKind.IO_INPUT, f32, (1, 2)),
        Buffer(1, "W", BufferKind.WEIGHT, f32, (2, 2)),
        *(Buffer(2 + i, f"b{i}", KINDS[k], f32, (1, 2)) for i, k in enumerate(kinds)),
    ]
    out = []
    for n, (src, dst, col, oc, ths, sm) in enumerate(tasks):
        waits = [Wait(c, t) for c, t in enumerate(ths) if t]
        source = 0 if src < 0 else 2 + src
        if col < 0:
            op, ins, params = InstructionKind.COPY, [source], {}
        else:
            op, ins, params = InstructionKind.GEMV_TILE, [source, 1], {"K": 2, "N_tile": 1, "n_off": col}
        out.append(Task(n, op, ins, [2 + dst], oc, waits, params, sm if sm >= 0 else None))
    pages = PageAllocation({2: 0, 3: 0}, [Page(0, buffers[2].space, 8)]) if paged else None
    counters = [Counter(c, init) for c, init in enumerate(inits)]
    return MegakernelProgram(buffers=buffers, counters=counters, tasks=out, pages=pages, target=TARGET)
