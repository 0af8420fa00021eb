"""Race-freedom obligations (codes R3xx, spec §3.2, §3.3, §4).

A counter carries a count, not the identity of who finished, so a read is safe
only when *every* other writer of the buffer happens-before the reader through
dependency edges, and two writers of one buffer are safe only when their tiles
are disjoint under one counter or they are totally ordered. Happens-before
queries go through :class:`amkspec.proofs.reach.Reachability` (direct edges
first, then chunked ancestor bitsets), so every check runs at any program size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from amkspec.ir import ON_CHIP_SPACES, READONLY_KINDS, BufferKind, InstructionKind, MemSpace
from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex, is_int
from amkspec.proofs.structure import buffer_problem, page_index

_R, _E, _W = Family.RACES, Severity.ERROR, Severity.WARNING
PARTIAL_JOIN = register(
    "R301",
    _R,
    "§3.2",
    _E,
    "a wait on a shared counter uses a threshold below its producer count (all-join rule)",
)
NEVER_PRODUCED = register("R302", _R, "§3.2", _E, "a task reads a transient buffer that no task writes")
UNORDERED_READ = register(
    "R303", _R, "§3.2", _E, "a read is not ordered after every other writer of the buffer (happens-before)"
)
SELF_READ = register(
    "R304", _R, "§3.2", _W, "a task reads a buffer only it writes (its own uninitialised output)"
)
KV_ORDER = register(
    "R305", _R, "§3.2", _E, "a KV_CACHE written this pass is read without being ordered after its writers"
)
WRITE_WRITE = register(
    "R306", _R, "§3.2", _E, "two writers of a buffer are neither disjoint tiles under one counter nor ordered"
)
READONLY_WRITE = register(
    "R307", _R, "§3.2", _E, "a task writes a read-only buffer (WEIGHT, CONST, IO_INPUT)"
)
UNWRITTEN_COLUMNS = register(
    "R308", _R, "§3.2", _E, "a consumed buffer has columns that no tile writes (a read of unwritten data)"
)
ON_CHIP_SMS = register(
    "R309",
    _R,
    "§4",
    _E,
    "an SMEM/REGISTER buffer is used on more than one SM, or by unassigned and assigned tasks",
)
ON_CHIP_UNASSIGNED = register(
    "R310", _R, "§4", _W, "an SMEM/REGISTER buffer's users have no SM yet (they require same-SM placement)"
)
PAGE_ALIAS = register(
    "R311",
    _R,
    "§3.3",
    _E,
    "two buffers share a page but a use of one is not ordered before a write of the other",
)

Interval = tuple[int, int]
Footprint = tuple[Interval | None, Interval | None]
"""(rows, columns) written by a task; None means every row / every column."""


def _kind(ix: ProgramIndex, bid: int) -> BufferKind | None:
    kind = getattr(ix.buffers.get(bid), "kind", None)
    return kind if isinstance(kind, BufferKind) else None


# -- waits -----------------------------------------------------------------------------------


def check_all_join(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """A wait on a counter with > 1 producer uses threshold == #producers (spec §3.2)."""
    producers = ix.producers
    for pos, waits in enumerate(ix.waits):
        for _, c, t in waits:
            makers = producers.get(c, ())
            if len(makers) > 1 and type(t) is int and 1 <= t < len(makers) and c != ix.out_counter[pos]:
                yield diag(
                    PARTIAL_JOIN,
                    f"task {ix.describe(pos)} waits on counter {c} with threshold {t} but counter "
                    f"{c} has {len(makers)} producers ({ix.describe_many(makers)}); "
                    "a shared counter needs the full join",
                    tasks=[ix.task_id(pos), *ix.task_ids(makers)],
                    counters=[c],
                )


# -- writes to read-only kinds ---------------------------------------------------------------


def check_readonly_writes(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """WEIGHT, CONST and IO_INPUT buffers are read without producer edges, so nobody may write them.

    Spec §3.2.
    """
    for bid, writers in ix.writers.items():
        kind = _kind(ix, bid)
        if kind is None or kind not in READONLY_KINDS:
            continue
        for w in writers:
            yield diag(
                READONLY_WRITE,
                f"task {ix.describe(w)} writes buffer {ix.buffer_name(bid)} of read-only kind {kind.name}; "
                "its readers take no dependency on any writer",
                tasks=[ix.task_id(w)],
                buffers=[bid],
            )


# -- read after write ------------------------------------------------------------------------


def check_provenance(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Every read of a transient buffer follows every other writer of it (spec §3.2 and KV ordering)."""
    if not ix.acyclic:
        return
    pending: list[tuple[int, int, list[int]]] = []
    queries: list[tuple[int, int]] = []
    out_counter = ix.out_counter
    for bid, readers in ix.readers.items():
        kind = _kind(ix, bid)
        if kind is None or kind in READONLY_KINDS:
            continue
        writers = ix.writers.get(bid, [])
        if not writers:
            if kind is not BufferKind.KV_CACHE:
                yield from _never_produced(ix, bid, kind, readers)
            continue
        for r in readers:
            others = [w for w in writers if w != r]
            if not others:
                if kind is not BufferKind.KV_CACHE:
                    yield diag(
                        SELF_READ,
                        f"task {ix.describe(r)} reads buffer {ix.buffer_name(bid)}, which only it writes "
                        "(an in-place read of its own uninitialised output)",
                        tasks=[ix.task_id(r)],
                        buffers=[bid],
                    )
                continue
            waited = ix.wait_counters[r]
            unresolved = [w for w in others if out_counter[w] not in waited]
            if unresolved:
                pending.append((r, bid, unresolved))
                queries.extend((w, r) for w in unresolved)
    ordered = ix.reach.ancestors(queries)
    for r, bid, unresolved in pending:
        bad = [w for w in unresolved if (w, r) not in ordered]
        if bad:
            yield _unordered_read(ix, r, bid, bad)


def _never_produced(ix: ProgramIndex, bid: int, kind: BufferKind, readers: list[int]) -> Iterator[Diagnostic]:
    for r in readers:
        yield diag(
            NEVER_PRODUCED,
            f"task {ix.describe(r)} reads buffer {ix.buffer_name(bid)} ({kind.name}) but no task writes it",
            tasks=[ix.task_id(r)],
            buffers=[bid],
        )


def _unordered_read(ix: ProgramIndex, r: int, bid: int, bad: list[int]) -> Diagnostic:
    kv = _kind(ix, bid) is BufferKind.KV_CACHE
    what = "KV cache" if kv else "buffer"
    counters = sorted({c for c in (ix.out_counter[w] for w in bad) if c is not None})
    return diag(
        KV_ORDER if kv else UNORDERED_READ,
        f"task {ix.describe(r)} reads {what} {ix.buffer_name(bid)} but its writer(s) "
        f"{ix.describe_many(bad)} are not ordered before it (no dependency path; counter(s) "
        f"{', '.join(map(str, counters))} not waited on transitively): the read can see unwritten data",
        tasks=[ix.task_id(r), *ix.task_ids(bad)],
        buffers=[bid],
        counters=counters,
    )


# -- write footprints ------------------------------------------------------------------------


def _range(params: dict[Any, Any], off: str, size: str) -> Interval | None:
    start, width = params.get(off), params.get(size)
    if is_int(start) and is_int(width) and start >= 0 and width > 0:
        return (start, start + width)
    return None


def footprint(task: Any) -> Footprint:
    """Rows and columns a task writes: GEMV/GEMM tiles write ``[n_off, n_off+N_tile)`` (GEMM also
    rows ``[m_off, m_off+M_tile)``); every other task, or a tile with invalid params, writes all.

    Spec §3.2.
    """
    op = getattr(task, "op", None)
    params = getattr(task, "params", None)
    if op not in _TILED or not isinstance(params, dict):
        return (None, None)
    cols = _range(params, "n_off", "N_tile")
    if cols is None:
        return (None, None)
    rows = _range(params, "m_off", "M_tile") if op is InstructionKind.GEMM_TILE else None
    return (rows, cols)


_TILED = (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE)


def _overlap(a: Interval | None, b: Interval | None) -> bool:
    return a is None or b is None or (a[0] < b[1] and b[0] < a[1])


def _show(iv: Interval | None, what: str) -> str:
    return f"all {what}" if iv is None else f"{what} [{iv[0]}, {iv[1]})"


def overlapping_pair(writers: list[int], fps: list[Footprint]) -> tuple[int, int] | None:
    """Indices of two writers whose footprints overlap, or None when all are pairwise disjoint (spec §3.2)."""
    idx = range(len(writers))
    if all(f[0] is None and f[1] is not None for f in fps):
        order = sorted(idx, key=lambda i: fps[i][1])  # type: ignore[arg-type,return-value]
        reach_end, holder = -1, -1
        for i in order:
            cols = fps[i][1]
            assert cols is not None
            if cols[0] < reach_end:
                return (holder, i)
            if cols[1] > reach_end:
                reach_end, holder = cols[1], i
        return None
    for i in idx:
        for j in range(i + 1, len(writers)):
            if _overlap(fps[i][0], fps[j][0]) and _overlap(fps[i][1], fps[j][1]):
                return (i, j)
    return None


def check_write_write(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Writers of one buffer: disjoint tiles under one counter, or a total order (beyond the spec).

    Spec §3.2.
    """
    if not ix.acyclic:
        return
    rank = ix.reach.rank
    pending: list[tuple[int, list[int], tuple[int, int] | None]] = []
    queries: list[tuple[int, int]] = []
    for bid, writers in ix.writers.items():
        kind = _kind(ix, bid)
        if len(writers) < 2 or kind is None or kind in READONLY_KINDS:
            continue
        fps = [footprint(ix.tasks[w]) for w in writers]
        pair = overlapping_pair(writers, fps)
        counters = {ix.out_counter[w] for w in writers}
        if pair is None and len(counters) == 1 and None not in counters:
            continue
        chain = sorted(writers, key=rank.__getitem__)
        queries.extend(itertools.pairwise(chain))
        clash = (writers[pair[0]], writers[pair[1]]) if pair is not None else None
        pending.append((bid, chain, clash))
    ordered = ix.reach.ancestors(queries)
    for bid, chain, clash in pending:
        gap = next(((a, b) for a, b in itertools.pairwise(chain) if (a, b) not in ordered), None)
        if gap is not None:
            yield _write_race(ix, bid, gap, clash)


def _write_race(
    ix: ProgramIndex, bid: int, gap: tuple[int, int], clash: tuple[int, int] | None
) -> Diagnostic:
    a, b = clash if clash is not None else gap
    fa, fb = footprint(ix.tasks[a]), footprint(ix.tasks[b])
    if clash is not None:
        why = (
            f"their footprints ({_show(fa[0], 'rows')}, {_show(fa[1], 'columns')}) and "
            f"({_show(fb[0], 'rows')}, {_show(fb[1], 'columns')}) overlap"
        )
    else:
        why = f"they signal different counters ({ix.out_counter[a]}, {ix.out_counter[b]})"
    return diag(
        WRITE_WRITE,
        f"tasks {ix.describe(a)} and {ix.describe(b)} both write buffer {ix.buffer_name(bid)}: {why} and "
        f"the writers are not totally ordered (no path from {ix.describe(gap[0])} to {ix.describe(gap[1])}); "
        "multiple writers need disjoint tiles under one counter or a total order",
        tasks=ix.task_ids([a, b]),
        buffers=[bid],
        counters=[c for c in (ix.out_counter[a], ix.out_counter[b]) if c is not None],
    )


def check_coverage(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Tiled writers of a consumed buffer must cover its last dim: a gap is read as unwritten data.

    Spec §3.2.
    """
    tasks = ix.tasks
    for bid, writers in ix.writers.items():
        if any(getattr(tasks[w], "op", None) not in _TILED for w in writers):
            continue
        buf = ix.buffers[bid]
        kind = _kind(ix, bid)
        readers = ix.readers.get(bid, [])
        if kind not in (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT) or buffer_problem(buf) is not None:
            continue
        if (not readers and kind is not BufferKind.IO_OUTPUT) or not buf.shape:
            continue
        cols = [footprint(ix.tasks[w])[1] for w in writers]
        if any(c is None for c in cols):
            continue
        gaps = _gaps([c for c in cols if c is not None], buf.shape[-1])
        if gaps:
            users = f"read by {ix.describe_many(readers)}" if readers else "returned to the host (IO_OUTPUT)"
            shown = ", ".join(f"[{a}, {b})" for a, b in gaps[:4])
            yield diag(
                UNWRITTEN_COLUMNS,
                f"columns {shown} of buffer {ix.buffer_name(bid)} (last dim {buf.shape[-1]}) are "
                f"written by no tile of {ix.describe_many(writers)}, but the buffer is {users}",
                tasks=ix.task_ids([*writers, *readers]),
                buffers=[bid],
            )


def _gaps(intervals: list[Interval], size: int) -> list[Interval]:
    gaps: list[Interval] = []
    at = 0
    for start, end in sorted(intervals):
        if start > at:
            gaps.append((at, min(start, size)))
        at = max(at, end)
        if at >= size:
            break
    if at < size:
        gaps.append((at, size))
    return [g for g in gaps if g[0] < g[1]]


# -- on-chip buffers -------------------------------------------------------------------------


def check_on_chip(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """SMEM/REGISTER buffers are private to one SM: all their users run on that SM (beyond the spec).

    Spec §4.
    """
    for bid, buf in ix.buffers.items():
        space = getattr(buf, "space", None)
        if not isinstance(space, MemSpace) or space not in ON_CHIP_SPACES:
            continue
        users = sorted(set(ix.readers.get(bid, [])) | set(ix.writers.get(bid, [])))
        if not users:
            continue
        sms = {u: getattr(ix.tasks[u], "sm", None) for u in users}
        placed = sorted({s for s in sms.values() if is_int(s)})
        loose = [u for u, s in sms.items() if not is_int(s)]
        name = f"buffer {ix.buffer_name(bid)} in {space.name}"
        if len(placed) > 1:
            msg = (
                f"{name} is used on SMs {placed} by {ix.describe_many(users)}; "
                "on-chip memory is private to one SM"
            )
        elif placed and loose:
            msg = (
                f"{name} is used on SM {placed[0]} and by unassigned task(s) {ix.describe_many(loose)}, "
                "which may run on another SM"
            )
        else:
            if not placed:
                yield diag(
                    ON_CHIP_UNASSIGNED,
                    f"{name} requires same-SM placement of its users {ix.describe_many(users)}",
                    tasks=ix.task_ids(users),
                    buffers=[bid],
                )
            continue
        yield diag(ON_CHIP_SMS, msg, tasks=ix.task_ids(users), buffers=[bid])


# -- page aliasing ---------------------------------------------------------------------------


def check_page_aliasing(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Occupants of one page have ordered live ranges: every use of one happens-before every write
    of the next (spec §3.3, an error as in the reference code)."""
    alloc = ix.prog.pages
    if alloc is None or not ix.acyclic or not isinstance(getattr(alloc, "buffer_to_page", None), dict):
        return
    pages = page_index(ix)
    occupants: dict[int, list[int]] = {}
    for bid, pid in alloc.buffer_to_page.items():
        if is_int(bid) and bid in ix.buffers and is_int(pid) and pid in pages and ix.writers.get(bid):
            occupants.setdefault(pid, []).append(bid)
    rank = ix.reach.rank
    checks: list[tuple[int, int, int]] = []
    queries: list[tuple[int, int]] = []
    failed: list[tuple[int, int, int, int, int]] = []
    for pid, bids in occupants.items():
        bids.sort(key=lambda b: min(rank[w] for w in ix.writers[b]))
        for a, b in itertools.pairwise(bids):
            last_use = max(_uses(ix, a), key=rank.__getitem__)
            first_write = min(ix.writers[b], key=rank.__getitem__)
            if rank[last_use] >= rank[first_write]:
                failed.append((pid, a, b, last_use, first_write))
                continue
            checks.append((pid, a, b))
            queries.extend((u, w) for u in _uses(ix, a) for w in ix.writers[b])
    ordered = ix.reach.ancestors(queries)
    for pid, a, b in checks:
        bad = next(((u, w) for u in _uses(ix, a) for w in ix.writers[b] if (u, w) not in ordered), None)
        if bad is not None:
            failed.append((pid, a, b, *bad))
    for pid, a, b, u, w in sorted(failed):
        yield _clobber(ix, pid, a, b, u, w)


def _uses(ix: ProgramIndex, bid: int) -> list[int]:
    return sorted(set(ix.readers.get(bid, [])) | set(ix.writers.get(bid, [])))


def _clobber(ix: ProgramIndex, pid: int, a: int, b: int, u: int, w: int) -> Diagnostic:
    return diag(
        PAGE_ALIAS,
        f"buffers {ix.buffer_name(a)} and {ix.buffer_name(b)} share page {pid} but task {ix.describe(w)} "
        f"writes {ix.buffer_name(b)} without being ordered after task {ix.describe(u)}, which uses "
        f"{ix.buffer_name(a)}: the write can clobber live data",
        tasks=ix.task_ids([u, w]),
        buffers=[a, b],
    )
