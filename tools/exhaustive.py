"""Exhaustive small-scope check: ``validate()`` against the explicit-state model checker on
*every* program of a bounded domain, one representative per symmetry class (issue 9, "proofs
about the code").

Run: ``python3 tools/exhaustive.py [--tasks 4] [--buffers 2] [--counters 2] [--threshold 2]
[--init] [--sm] [--pages] [--minutes 10]``. Prints the domain's size per task count, then checks
1, 2, … tasks until the time is up; prints the bound reached (complete up to N tasks, and the
fraction of N+1), programs per second and each disagreement (with the program's JSON); exits 1 on
a disagreement. Agreement is :func:`agreement.compare`.

**The domain** is the synchronisation skeleton × an abstract footprint per task × buffer kinds:

* buffers: ``x`` (IO_INPUT ``[1, 2]``, a source nobody writes), ``W`` (WEIGHT ``[2, 2]``, the tile
  weights) and ``--buffers`` data buffers ``[1, 2]``, each ACTIVATION, IO_OUTPUT or WEIGHT (a
  read-only kind); with ``--pages`` the first two data buffers may share a page (both ACTIVATION);
* counters: ``--counters``, ``init`` 0 (with ``--init``: 0 or 1);
* a task: reads one buffer whole (``x`` or a data buffer), writes one data buffer whole (COPY) or
  one column of it (GEMV_TILE over ``W``, ``n_off`` 0 or 1), signals one counter, and waits on
  each counter with a threshold 0 (no wait) to ``--threshold``; with ``--sm`` it runs on SM 0
  or 1, and the task list order matters.

Two written regions are equal, disjoint or nested; a read is a whole buffer. Partial overlaps,
tile reads, KV windows and the opcodes' numerics are left to ``tools/random_agreement.py``
(random programs with all 20 opcodes) and the footprint property test
(``tests/semantics/test_footprint.py``), which checks that the footprint every rule reads is
the semantics' own.

**Symmetry.** Both ``validate()`` and the model checker see a program only through which tasks
touch which elements of which buffer and how tasks wait and signal, so these maps change neither
the codes nor the findings: renaming the data buffers, renaming the counters, mirroring the two
columns (``W`` and ``x`` are never written, so which row of ``W`` a tile reads is invisible),
reordering the task list (without SMs: nothing depends on it) or, with SMs, interleaving the two
SM queues differently and swapping the SMs (only the order within one queue matters). The tool
checks one representative per class: without SMs a multiset of tasks, with SMs a pair of queues;
of each class the least under those maps. The class counts come from Burnside's lemma
(:meth:`Domain.size`). ``tests/proofs/test_exhaustive.py`` checks that the maps leave codes and
findings unchanged on random programs of the domain.

**Counter init.** A nonzero ``init`` is rejected by S103 whatever the tasks (spec: counters start
at 0), and :func:`agreement.compare` stops there, so ``--init`` multiplies the domain by
``2^counters`` without information; the CI slice covers it at 2 tasks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agreement import compare

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
    dumps,
)
from amkspec.proofs.footprint import Memo

TARGET = TARGETS["h100"]
KINDS = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.WEIGHT)


@attrs.frozen
class Bound:
    """The domain (see the module docstring)."""

    tasks: int = 4
    buffers: int = 2
    counters: int = 2
    threshold: int = 2
    init: bool = False
    sm: bool = False
    pages: bool = False


Shape = tuple[int, int, int, int, tuple[int, ...]]
"""A task without its SM: (source: -1 = x, else a data buffer; written data buffer; column:
-1 whole, 0 or 1 a tile; out_counter; threshold per counter, 0 = no wait)."""

Head = tuple[tuple[int, ...], tuple[int, ...], bool]
"""(kind index per data buffer, init per counter, whether b0 and b1 share a page)."""

TaskShape = tuple[int, int, int, int, tuple[int, ...], int]
"""A :data:`Shape` plus its SM (-1: none)."""

Program = tuple[tuple[int, ...], tuple[int, ...], bool, tuple[TaskShape, ...]]
"""(kinds, inits, paged, tasks): what :func:`build` turns into a MegakernelProgram."""

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
        if bound.pages and bound.buffers != 2:
            raise ValueError("--pages needs exactly 2 data buffers")
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

    def programs(self, n: int) -> Iterator[Program]:
        """One program of ``n`` tasks per symmetry class."""
        queues = (
            self._queue_pairs(n)
            if self.bound.sm
            else ((ms, ()) for ms in _multisets(len(self.shapes), n))
        )
        for q0, q1 in queues:
            for perms, heads in self.classes:
                if all(self._least((q0, q1), p) for p in perms):
                    for kinds, inits, paged in heads:
                        yield (kinds, inits, paged, self._tasks(q0, q1))

    def _least(self, q: tuple[tuple[int, ...], tuple[int, ...]], p: Sequence[int]) -> bool:
        """Whether mapping the shapes by ``p`` (and, with SMs, swapping the SMs) leaves ``q`` no smaller."""
        a, b = tuple(p[i] for i in q[0]), tuple(p[i] for i in q[1])
        if not self.bound.sm:
            return tuple(sorted(a)) >= q[0]
        return (a, b) >= q and (b, a) >= q

    def _queue_pairs(self, n: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
        s = range(len(self.shapes))
        for k in range(n, -1, -1):
            for q0 in itertools.product(s, repeat=k):
                for q1 in itertools.product(s, repeat=n - k):
                    yield q0, q1

    def _tasks(self, q0: tuple[int, ...], q1: tuple[int, ...]) -> tuple[TaskShape, ...]:
        if not self.bound.sm:
            return tuple((*self.shapes[i], -1) for i in q0)
        return tuple((*self.shapes[i], 0) for i in q0) + tuple((*self.shapes[i], 1) for i in q1)


def _multisets(s: int, n: int) -> Iterator[tuple[int, ...]]:
    return itertools.combinations_with_replacement(range(s), n)


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


@attrs.define
class Report:
    """Totals of one run."""

    bound: Bound
    complete: int = 0
    """The largest task count whose every class was checked."""
    programs: int = 0
    partial: tuple[int, int] | None = None
    """(checked, classes) at task count ``complete + 1`` when the time ran out there."""
    seconds: float = 0.0
    disagreements: list[tuple[str, str]] = attrs.Factory(list)

    def summary(self) -> str:
        """The bound reached, the rate and the disagreements, on one line."""
        frac = ""
        if self.partial is not None:
            done, total = self.partial
            frac = (
                f", and {done:,} of the {total:,} classes of {self.complete + 1} tasks "
                f"({100 * done / total:.1f}%)"
            )
        rate = self.programs / self.seconds if self.seconds else 0.0
        return (
            f"complete up to {self.complete} task(s){frac}; programs checked: {self.programs:,} "
            f"({rate:.0f}/s); disagreements: {len(self.disagreements)}; time: {self.seconds:.1f} s"
        )


def run(bound: Bound, seconds: float, verbose: bool = False) -> Report:
    """Check task counts 1, 2, … up to ``bound.tasks`` until ``seconds`` have passed."""
    domain = Domain(bound)
    report = Report(bound)
    memo = Memo()  # every program of the domain has the same buffer shapes and dtypes by id
    start = time.monotonic()
    stop = start + seconds
    for n in range(1, bound.tasks + 1):
        done = 0
        for p in domain.programs(n):
            if time.monotonic() > stop:
                report.partial = (done, domain.size(n)[1])
                report.seconds = time.monotonic() - start
                return report
            prog = build(p)
            why = compare(prog, memo)
            done += 1
            report.programs += 1
            if why is not None:
                report.disagreements.append((why, dumps(prog)))
                if verbose:
                    print(f"DISAGREEMENT: {why}\n{dumps(prog)}", flush=True)
        report.complete = n
        if verbose:
            elapsed = time.monotonic() - start
            print(f"  all {done:,} classes of {n} task(s) checked ({elapsed:.1f} s)", flush=True)
    report.seconds = time.monotonic() - start
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--buffers", type=int, default=2)
    parser.add_argument("--counters", type=int, default=2)
    parser.add_argument("--threshold", type=int, default=2)
    parser.add_argument("--init", action="store_true")
    parser.add_argument("--sm", action="store_true")
    parser.add_argument("--pages", action="store_true")
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args()
    bound = Bound(
        args.tasks, args.buffers, args.counters, args.threshold, args.init, args.sm, args.pages
    )
    domain = Domain(bound)
    print(f"bound: {json.dumps(attrs.asdict(bound))}", flush=True)
    print(f"task shapes: {len(domain.shapes)}; heads: {len(domain.heads)}; symmetries: {len(domain.group)}")
    for n in range(1, bound.tasks + 1):
        raw, classes = domain.size(n)
        print(f"  {n} task(s): {raw:,} programs, {classes:,} symmetry classes", flush=True)
    report = run(bound, args.minutes * 60, verbose=True)
    print(report.summary())
    sys.exit(1 if report.disagreements else 0)


if __name__ == "__main__":
    main()
