"""Resolve ``ScheduleConfig.page_allocation`` into a PageAllocation of the activations (spec §1.6).

Two activations may share a page only when their live ranges are *ordered*: every use (read or
write) of the earlier one happens-before (a path in the dependency DAG) every write of the later
one, so no execution can clobber a value still to be read. Policies:

- ``"none"``: no allocation (every activation keeps its own storage);
- ``"linear"``: one page per activation (no reuse, but explicit live ranges);
- ``"graph_color"``: greedy colouring in task-list order of first write: each activation goes to
  an existing page of its memory space whose every occupant is ordered before it (the one that
  grows least, then the smallest), or to a new page. A page is as large as its largest occupant.

Page ``live_start``/``live_end`` are the task ids of the first and last use of its occupants.
"""

from __future__ import annotations

import attrs

from amkspec.ir import BufferKind, MegakernelProgram, Page, PageAllocation
from amkspec.ir.graph import dependency_edges

POLICIES = ("none", "linear", "graph_color")


@attrs.define
class _Live:
    """One activation's uses, as task positions in the list and as bitsets."""

    buf: int
    first: int
    last: int
    writers: int
    after_all: int
    """Tasks that every use of the buffer reaches (a bitset of list positions)."""


def allocate_pages(prog: MegakernelProgram, policy: str) -> PageAllocation | None:
    """The allocation ``policy`` asks for; raises ValueError for an unknown one."""
    if policy not in POLICIES:
        raise ValueError(f"unknown page_allocation {policy!r} (use {', '.join(POLICIES)})")
    if policy == "none":
        return None
    lives = _live_ranges(prog)
    groups = [[live] for live in lives] if policy == "linear" else _colour(prog, lives)
    return _allocation(prog, groups)


def _reach(prog: MegakernelProgram) -> list[int]:
    """For each list position, the bitset of positions strictly reachable from it."""
    pos = {t.id: i for i, t in enumerate(prog.tasks)}
    succ: list[list[int]] = [[] for _ in prog.tasks]
    for a, b in dependency_edges(prog):
        if a != b and a in pos and b in pos:
            succ[pos[a]].append(pos[b])
    reach = [0] * len(prog.tasks)
    order = prog.topological_order()
    if order is None:
        raise ValueError("cannot allocate pages: the dependency graph has a cycle")
    for tid in reversed(order):
        i = pos[tid]
        bits = 0
        for j in succ[i]:
            bits |= (1 << j) | reach[j]
        reach[i] = bits
    return reach


def _live_ranges(prog: MegakernelProgram) -> list[_Live]:
    reach = _reach(prog)
    everything = (1 << len(prog.tasks)) - 1
    uses: dict[int, list[int]] = {}
    writers: dict[int, int] = {}
    activations = {b.id for b in prog.buffers if b.kind is BufferKind.ACTIVATION}
    for i, task in enumerate(prog.tasks):
        for buf in task.inputs + task.outputs:
            if buf in activations:
                uses.setdefault(buf, []).append(i)
        for buf in task.outputs:
            if buf in activations:
                writers[buf] = writers.get(buf, 0) | (1 << i)
    lives = []
    for buf, positions in uses.items():
        after = everything
        for i in positions:
            after &= reach[i]
        lives.append(_Live(buf, min(positions), max(positions), writers.get(buf, 0), after))
    lives.sort(key=lambda live: (live.first, live.buf))
    return lives


def _colour(prog: MegakernelProgram, lives: list[_Live]) -> list[list[_Live]]:
    size = {b.id: b.nbytes for b in prog.buffers}
    space = {b.id: b.space for b in prog.buffers}
    groups: list[list[_Live]] = []
    for live in lives:
        best: list[_Live] | None = None
        best_key: tuple[int, int] = (0, 0)
        for group in groups:
            if space[group[0].buf] is not space[live.buf]:
                continue
            if any(live.writers & ~prev.after_all for prev in group):
                continue
            have = max(size[m.buf] for m in group)
            key = (max(0, size[live.buf] - have), have)
            if best is None or key < best_key:
                best, best_key = group, key
        if best is None:
            groups.append([live])
        else:
            best.append(live)
    return groups


def _allocation(prog: MegakernelProgram, groups: list[list[_Live]]) -> PageAllocation:
    bufs = prog.buffer_by_id()
    ids = [t.id for t in prog.tasks]
    mapping: dict[int, int] = {}
    pages: list[Page] = []
    for page_id, group in enumerate(groups):
        for live in group:
            mapping[live.buf] = page_id
        pages.append(Page(page_id, bufs[group[0].buf].space, max(bufs[m.buf].nbytes for m in group),
                          ids[min(m.first for m in group)], ids[max(m.last for m in group)]))
    return PageAllocation(dict(sorted(mapping.items())), pages)
