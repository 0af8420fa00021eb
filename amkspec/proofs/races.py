"""Race-freedom obligations (codes R3xx, spec §3.3, §1.6).

A counter carries a count, not the identity of who finished, so a read is safe
only when *every* other writer of the elements it reads happens-before the reader
through dependency edges, and two writers of one buffer are safe only when their
tiles are disjoint under one counter or they are totally ordered. Which elements a
task reads and writes comes from the one footprint package
(:mod:`amkspec.footprint`); a declared operand the semantics do not touch
(a NOP's outputs, KV_APPEND's cache input) is no read and no write. Happens-before
queries go through :class:`amkspec.proofs.reach.Reachability` (direct edges
first, then chunked ancestor bitsets), so every check runs at any program size.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator, Sequence
from itertools import repeat
from operator import gt
from typing import Any

from amkspec.footprint import Box, Region, first_overlap, region_of, uncovered
from amkspec.ir import ON_CHIP_SPACES, READONLY_KINDS, BufferKind, MemSpace
from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex, is_int
from amkspec.proofs.structure import buffer_problem, page_index

_R, _E, _W = Family.RACES, Severity.ERROR, Severity.WARNING
PARTIAL_JOIN = register(
    "R301",
    _R,
    _E,
    "a wait on a shared counter uses a threshold below its producer count (all-join rule)",
)
NEVER_PRODUCED = register("R302", _R, _E, "a task reads a transient buffer that no task writes")
UNORDERED_READ = register(
    "R303", _R, _E, "a read is not ordered after every other writer of the buffer (happens-before)"
)
SELF_READ = register(
    "R304",
    _R,
    _E,
    "a task reads elements of a buffer that only it writes (its own uninitialised output)",
)
KV_ORDER = register(
    "R305", _R, _E, "a KV_CACHE written this pass is read without being ordered after its writers"
)
WRITE_WRITE = register(
    "R306", _R, _E, "two writers of a buffer are neither disjoint tiles under one counter nor ordered"
)
READONLY_WRITE = register("R307", _R, _E, "a task writes a read-only buffer (WEIGHT, CONST, IO_INPUT)")
UNWRITTEN_COLUMNS = register(
    "R308", _R, _E, "a consumed buffer has elements that no task writes (a read of unwritten data)"
)
ON_CHIP_SMS = register(
    "R309",
    _R,
    _E,
    "an SMEM/REGISTER buffer is used on more than one SM, or by unassigned and assigned tasks",
)
ON_CHIP_UNASSIGNED = register(
    "R310", _R, _W, "an SMEM/REGISTER buffer's users have no SM yet (they require same-SM placement)"
)
PAGE_ALIAS = register(
    "R311",
    _R,
    _E,
    "two buffers share a page but a use of one is not ordered before a write of the other",
)


def _kind(ix: ProgramIndex, bid: int) -> BufferKind | None:
    kind = getattr(ix.buffers.get(bid), "kind", None)
    return kind if type(kind) is BufferKind else None  # an enum with members has no subclasses


# -- waits -----------------------------------------------------------------------------------


def check_all_join(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """A wait on a counter with > 1 producer uses threshold == #producers (spec §3.3)."""
    lowest = ix.min_threshold
    if not any(map(gt, map(len, map(ix.producers.get, lowest, repeat(()))), lowest.values())):
        return  # no int threshold is below its counter's producer count
    shared = {c: makers for c, makers in ix.producers.items() if len(makers) > 1}
    # a task waiting on a counter has an edge from each of its producers (but itself, and a
    # producer of the counter is exempt), so the successors of one producer per shared counter
    # are every task that can break the rule
    waiting: set[int] = set()
    for producers in shared.values():
        waiting.update(ix.succs[producers[0]])
    for pos in sorted(waiting):
        for _, c, t in ix.waits[pos]:
            makers = shared.get(c)
            if makers is not None and type(t) is int and 1 <= t < len(makers) and c != ix.out_counter[pos]:
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

    Spec §3.3.
    """
    buffers = ix.buffers
    for bid, writers in ix.writers.items():
        kind = getattr(buffers[bid], "kind", None)  # as _kind: a writer's buffer is in the table
        if type(kind) is not BufferKind or kind not in READONLY_KINDS:
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
    """Every read of a transient buffer follows every other writer of the elements it reads
    (spec §3.3 and KV ordering); a task that reads elements only it writes reads stale data."""
    if not ix.acyclic:
        return
    pending: list[tuple[int, int, list[int]]] = []
    queries: list[tuple[int, int]] = []
    out_counter, wait_counters, buffers = ix.out_counter, ix.wait_counters, ix.buffers
    writers_of, regions, meets = ix.writers, ix.regions, _Meets()
    overlap = meets.found.get  # its memo, asked inline
    succs, producers_of = ix.succs, ix.producers.get
    for bid, readers in ix.readers.items():
        writers = writers_of.get(bid)
        if (
            writers is not None
            and readers == succs[writers[0]]
            and (len(writers) == 1 or writers == producers_of(out_counter[writers[0]]))  # type: ignore[arg-type]
        ):
            # the readers are exactly the tasks waiting on the counter every writer signals (the
            # writers are that counter's producers; None has none; the graph is acyclic, so no
            # reader is a writer): each read is resolved below at ``signal``, whatever the kind
            continue
        kind = getattr(buffers[bid], "kind", None)
        if type(kind) is not BufferKind or kind in READONLY_KINDS:
            continue
        if not writers:
            if kind is not BufferKind.KV_CACHE:
                yield from _never_produced(ix, bid, kind, readers)
            continue
        lone = writers[0] if len(writers) == 1 else None
        write: Region | None = None  # the lone writer's region, once asked
        if lone is not None:
            signal = out_counter[lone]
        else:
            signals = set(map(out_counter.__getitem__, writers))
            signal = signals.pop() if len(signals) == 1 else None
        for r in readers:
            if r == lone:  # no other writer
                if kind is not BufferKind.KV_CACHE and not ix.read_region(r, bid).is_empty:
                    yield _self_read(ix, r, bid)
                continue
            waited = wait_counters[r]
            if signal is not None and signal in waited:
                continue  # it waits on the one counter every writer signals
            if lone is not None:  # the one writer is another task whose counter it does not wait on
                if write is None:
                    _, _, ids, written = regions(lone)
                    write = written[0] if len(ids) == 1 else region_of(ids, written, bid)  # ix.write_region
                ids, reads, _, _ = regions(r)
                read = reads[ids.index(bid)] if ids.count(bid) == 1 else region_of(ids, reads, bid)
                hit = overlap((id(read), id(write)))
                if hit[0] if hit is not None else meets(read, write):  # ix.read_region(r, bid) overlaps it
                    pending.append((r, bid, writers))
                    queries.append((lone, r))
                continue
            unresolved = [i for i, w in enumerate(writers) if w != r and out_counter[w] not in waited]
            if unresolved:
                read, written = ix.read_region(r, bid), ix.write_regions(bid)
                unresolved = [writers[i] for i in unresolved if read.overlaps(written[i])]
            if unresolved:
                pending.append((r, bid, unresolved))
                queries.extend((w, r) for w in unresolved)
    if not queries:
        return  # every read is resolved without a happens-before query
    ordered = ix.reach.ancestors(queries)
    if len(ordered) == len(queries) or ordered.issuperset(queries):
        return  # every asked writer happens before its reader
    for r, bid, unresolved in pending:
        bad = [w for w in unresolved if (w, r) not in ordered]
        if bad:
            yield _unordered_read(ix, r, bid, bad)


class _Meets:
    """``read.overlaps(write)`` memoised by the regions' identities within one check (tasks with
    equal operands and params share their Region objects, so every layer asks the same pair; the
    memo keeps both alive, so their ids stand for them)."""

    def __init__(self) -> None:
        self.found: dict[tuple[int, int], tuple[bool, Region, Region]] = {}

    def __call__(self, read: Region, write: Region) -> bool:
        key = (id(read), id(write))
        hit = self.found.get(key)
        if hit is None:
            hit = self.found[key] = (read.overlaps(write), read, write)
        return hit[0]


def _self_read(ix: ProgramIndex, r: int, bid: int) -> Diagnostic:
    return diag(
        SELF_READ,
        f"task {ix.describe(r)} reads {ix.read_region(r, bid).describe()} of buffer {ix.buffer_name(bid)}, "
        "which only it writes: it reads its own uninitialised output (the values are undefined)",
        tasks=[ix.task_id(r)],
        buffers=[bid],
    )


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


# -- write-after-write and coverage ----------------------------------------------------------


def check_write_write(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Writers of one buffer: disjoint footprints under one counter, or a total order (beyond the
    spec). A declared writer whose footprint is empty writes nothing and is left out.

    Spec §3.3.
    """
    if not ix.acyclic:
        return
    pending: list[tuple[int, list[int], tuple[int, int] | None]] = []
    queries: list[tuple[int, int]] = []
    out_counter, buffers, write_regions = ix.out_counter, ix.buffers, ix.write_regions
    signal, producers_of = out_counter.__getitem__, ix.producers.get
    tiles: dict[int, tuple[list[int], tuple[int, int] | None]] = {}
    for bid, declared in ix.writers.items():
        if len(declared) < 2:
            continue
        kind = getattr(buffers[bid], "kind", None)  # as _kind: a writer's buffer is in the table
        if type(kind) is not BufferKind or kind in READONLY_KINDS:
            continue
        # the same Region objects (tasks with equal operands share them) give the same answer: the
        # index gives such buffers one list, whose id stands for its boxes while the index lives
        regions = write_regions(bid)
        known = tiles.get(id(regions))
        if known is None:
            live = [i for i, reg in enumerate(regions) if reg.boxes != ()]
            pair = None
            if len(live) > 1:
                pair = first_overlap([regions[i] for i in live] if len(live) < len(regions) else regions)
            known = tiles[id(regions)] = (live, pair)
        live, pair = known
        if len(live) < 2:
            continue
        writers = [declared[i] for i in live] if len(live) < len(declared) else declared
        if pair is None:
            if (c := out_counter[writers[0]]) is not None and writers == producers_of(c):
                continue  # the writers are the counter's producers: disjoint tiles under one counter
            counters = set(map(signal, writers))
            if len(counters) == 1 and None not in counters:
                continue
        chain = sorted(writers, key=ix.reach.rank.__getitem__)
        queries.extend(itertools.pairwise(chain))
        clash = (writers[pair[0]], writers[pair[1]]) if pair is not None else None
        pending.append((bid, chain, clash))
    if not pending:
        return  # every buffer's writers are disjoint tiles under one counter
    ordered = ix.reach.ancestors(queries)
    for bid, chain, clash in pending:
        gap = next(((a, b) for a, b in itertools.pairwise(chain) if (a, b) not in ordered), None)
        if gap is not None:
            yield _write_race(ix, bid, gap, clash)


def _write_race(
    ix: ProgramIndex, bid: int, gap: tuple[int, int], clash: tuple[int, int] | None
) -> Diagnostic:
    a, b = clash if clash is not None else gap
    if clash is not None:
        why = (
            f"their footprints {ix.write_region(a, bid).describe()} and "
            f"{ix.write_region(b, bid).describe()} overlap"
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
    """Every element a task reads of a written ACTIVATION, and every element of a written
    IO_OUTPUT, is written by some other task: a gap is read as unwritten data.

    Spec §3.3.
    """
    fulls: dict[tuple[int, ...], Box] = {}
    gaps_of, tiles = _Uncovered(), _Tiles()
    tiles_of, repeated = tiles.found.get, _Repeated()  # the first: a memo, asked inline
    unused: dict[int, tuple[list[Box], Region]] = {}
    buffers, readers_of, regions, write_regions = ix.buffers, ix.readers, ix.regions, ix.write_regions
    activation, returned = BufferKind.ACTIVATION, BufferKind.IO_OUTPUT
    for bid, writers in ix.writers.items():
        buf = buffers[bid]
        kind = getattr(buf, "kind", None)
        if kind is not activation and kind is not returned:
            continue
        readers: Sequence[int] = readers_of.get(bid, ())
        if not readers and kind is not returned:
            continue
        covers: int | None = None  # the id of the writes' list, when the index shares it
        seen = unused  # per read region's id: its gaps in ``writes`` (asked only when ``covers`` is set)
        if len(writers) == 1:  # most buffers: ix.write_regions(bid) without building its list
            w = writers[0]
            _, _, ids, written = regions(w)
            write = written[0] if len(ids) == 1 else region_of(ids, written, bid)
            boxes = write.boxes
            if boxes is None:
                continue
            # (readers ascend: a writer before the first reads none of it)
            if len(boxes) == 1 and (not readers or w < readers[0] or w not in readers):
                full = fulls.get(shape := buf.shape)
                if full is None:  # the one box of every element (the operands are usable: ints)
                    full = fulls[shape] = tuple(zip(itertools.repeat(0), shape))
                if boxes[0] == full:
                    continue  # as a writer of the whole buffer below
            writes = [write]
        else:
            writes = write_regions(bid)
            covers = id(writes)  # the index's list: its id stands for the write regions
            plan = tiles_of(covers)
            if plan is None or plan[1] != buf.shape:
                plan = tiles(writes, covers, buf.shape)
            if plan[2] is None:
                continue
            if plan[2] and any(writers[i] not in readers for i in plan[2]):
                continue  # a writer of the whole buffer that reads none of it covers every other read
            seen = plan[3]
        shape = tuple(buf.shape)
        gaps: list[Box] = []
        if kind is BufferKind.IO_OUTPUT:
            gaps = gaps_of(None, writes, shape, covers)
        writing: Collection[int] = writers if len(writers) < 16 else set(writers)
        for r in readers:
            if gaps:
                break
            others, known = writes, covers
            if r in writing:
                others, known = [reg for w, reg in zip(writers, writes, strict=True) if w != r], None
                if not any(not o.is_empty for o in others):
                    continue  # R304 reports a read of elements only the reader writes
            ids, reads, _, _ = regions(r)
            read = reads[ids.index(bid)] if ids.count(bid) == 1 else repeated(ids, reads, bid)  # read_region
            if known is None:
                gaps = gaps_of(read, others, shape, None)
            else:
                asked = seen.get(id(read))
                if asked is None:  # the memo keeps ``read`` alive: its id stands for it
                    asked = seen[id(read)] = (gaps_of(read, others, shape, known), read)
                gaps = asked[0]
        # a malformed buffer is left to the structure checks (asked only here: the gaps of usable
        # operands are boxes, computed whatever else is wrong with the record)
        if gaps and buffer_problem(buf) is None:
            users = f"read by {ix.describe_many(readers)}" if readers else "returned to the host (IO_OUTPUT)"
            yield diag(
                UNWRITTEN_COLUMNS,
                f"{_show_gaps(gaps, shape)} of buffer {ix.buffer_name(bid)} (shape {list(shape)}) are "
                f"written by no task of {ix.describe_many(writers)}, but the buffer is {users}",
                tasks=ix.task_ids([*writers, *readers]),
                buffers=[bid],
            )


class _Uncovered:
    """:func:`~amkspec.footprint.uncovered` memoised by the regions' identities (one check).

    Only boxes matter. Tasks with equal operands and params share their Region objects (the
    footprint memo), so the tiles of every layer ask the same question; a region object is
    immutable and the memo keeps it alive, so the covers' ids (or the id of the index's shared
    list of them) stand for their boxes (the target, often a fresh union, is keyed by its boxes).
    ``target`` None is the whole buffer.
    """

    def __init__(self) -> None:
        self.found: dict[tuple[object, ...], tuple[list[Box], Region | None, list[Region]]] = {}

    def __call__(
        self, target: Region | None, covers: list[Region], shape: tuple[int, ...], ids: int | None
    ) -> list[Box]:
        """The gaps; ``ids``: the id of ``covers`` when the index shares that list (else the
        covers' own ids are the key)."""
        boxes = None if target is None else target.boxes
        key = (shape, boxes, tuple(map(id, covers)) if ids is None else ids)
        hit = self.found.get(key)
        if hit is None:
            gaps = uncovered(Region(None) if target is None else target, covers, shape)
            hit = self.found[key] = (gaps, target, list(covers))
        return hit[0]


class _Repeated:
    """:func:`~amkspec.footprint.region_of` for a buffer named more than once by a task
    (or not at all). When it is every operand (SILU_MUL's ``[gate, gate]``) the region is the
    union of the whole reads list, which tasks with equal operands and params share: memoised by
    that list's identity (the memo keeps it alive)."""

    def __init__(self) -> None:
        self.found: dict[int, tuple[Region, list[Region]]] = {}

    def __call__(self, ids: Sequence[int], reads: list[Region], bid: int) -> Region:
        if len(ids) != ids.count(bid):
            return region_of(ids, reads, bid)
        hit = self.found.get(id(reads))
        if hit is None:
            hit = self.found[id(reads)] = (region_of(ids, reads, bid), reads)
        return hit[0]


class _Tiles:
    """Per list of write regions and buffer shape: None when a region is unknown (``boxes``
    None), else the positions of the regions that are the one box of the whole buffer (every
    writer's operands are usable then, so the shape is a tuple of ints). Memoised by the id of
    the index's shared list (:meth:`~amkspec.proofs.index.ProgramIndex.write_regions`), for the
    shape last asked with it."""

    def __init__(self) -> None:
        self.found: dict[int, _Plan] = {}

    def __call__(self, writes: list[Region], key: int, shape: Any) -> _Plan:
        """``(writes, shape, positions, {})``, stored under ``key``: ``id(writes)`` (the dict is
        for the caller: the gaps of each read region in ``writes``, by the read's id)."""
        starts: list[int] | None = []  # one box starting at index 0 on every axis: the only candidates
        for i, region in enumerate(writes):
            boxes = region.boxes
            if boxes is None:
                starts = None
                break
            if len(boxes) == 1 and _at_origin(boxes[0]):
                starts.append(i)  # type: ignore[union-attr]
        if starts:
            full = tuple(zip(itertools.repeat(0), shape))
            starts = [i for i in starts if writes[i].boxes[0] == full]  # type: ignore[index]
        hit = self.found[key] = (writes, shape, starts, {})
        return hit


def _at_origin(box: Box) -> bool:
    """The box starts at index 0 on every axis (column tiles differ on the last axis: most are
    told apart by its start alone)."""
    return not box or (box[-1][0] == 0 and all(lo == 0 for lo, _ in box))


_Plan = tuple[list[Region], Any, list[int] | None, dict[int, tuple[list[Box], Region]]]
"""What :class:`_Tiles` knows of one list of write regions and a shape."""


def _show_gaps(gaps: list[Box], shape: tuple[int, ...]) -> str:
    """``columns [a, b), …`` when every gap spans all leading dims, else the element boxes."""
    if shape and all(all(iv == (0, d) for iv, d in zip(g[:-1], shape[:-1], strict=True)) for g in gaps):
        cols = sorted({g[-1] for g in gaps})
        return "columns " + ", ".join(f"[{a}, {b})" for a, b in cols[:4])
    shown = ["[" + ", ".join(f"{a}:{b}" for a, b in g) + "]" for g in gaps[:4]]
    return "elements " + ", ".join(shown) + (" …" if len(gaps) > 4 else "")


# -- on-chip buffers -------------------------------------------------------------------------


def check_on_chip(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """SMEM/REGISTER buffers are private to one SM: all their users run on that SM (beyond the spec).

    Spec §1.6, §3.3.
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
    writers: dict[int, list[int]] = {}
    occupants: dict[int, list[int]] = {}
    for bid, pid in alloc.buffer_to_page.items():
        if is_int(bid) and bid in ix.buffers and is_int(pid) and pid in pages:
            found = writers[bid] = _writers(ix, bid)
            if found:
                occupants.setdefault(pid, []).append(bid)
    uses: dict[int, list[int]] = {}
    reach = ix.reach
    rank = reach.rank
    checks: list[tuple[int, int, int, int | None]] = []  # (page, a, b, gate)
    queries: list[tuple[int, int]] = []
    failed: list[tuple[int, int, int, int, int]] = []
    for pid, bids in occupants.items():
        bids.sort(key=lambda b: min(rank[w] for w in writers[b]))
        for a, b in itertools.pairwise(bids):
            if a not in uses:
                uses[a] = _uses(ix, a, writers[a])
            last_use = max(uses[a], key=rank.__getitem__)
            first_write = min(writers[b], key=rank.__getitem__)
            if rank[last_use] >= rank[first_write]:
                failed.append((pid, a, b, last_use, first_write))
                continue
            gate = _gate(ix, first_write, writers[b])
            checks.append((pid, a, b, gate))
            if gate is not None:
                queries.extend((u, gate) for u in uses[a])
    # a use before the gate is before every write of b (transitively); only the occupant pairs
    # without a gate, or with a use the gate does not follow, ask every pair
    ordered = reach.ancestors(queries)
    unproven = [
        (pid, a, b)
        for pid, a, b, gate in checks
        if gate is None or not all((u, gate) in ordered for u in uses[a])
    ]
    ordered = reach.ancestors(pair for _, a, b in unproven for pair in itertools.product(uses[a], writers[b]))
    for pid, a, b in unproven:
        if ordered.issuperset(itertools.product(uses[a], writers[b])):
            continue
        bad = next(pair for pair in itertools.product(uses[a], writers[b]) if pair not in ordered)
        failed.append((pid, a, b, *bad))
    for pid, a, b, u, w in sorted(failed):
        yield _clobber(ix, pid, a, b, u, w)


def _gate(ix: ProgramIndex, first_write: int, writers: list[int]) -> int | None:
    """``first_write`` when every task of ``writers`` (more than one) is it or has all its direct
    predecessors among its own: whatever happens before ``first_write`` happens before a direct
    predecessor of it, so before every writer. None otherwise (then every pair is asked)."""
    preds = ix.preds[first_write]
    if len(writers) < 2 or not preds:
        return None
    need = set(preds)
    ok = all(w == first_write or need.issubset(ix.preds[w]) for w in writers)
    return first_write if ok else None


def _writers(ix: ProgramIndex, bid: int) -> list[int]:
    """Tasks that write at least one element of ``bid``."""
    regions = ix.write_regions(bid)
    return [w for w, reg in zip(ix.writers.get(bid, []), regions, strict=True) if not reg.is_empty]


def _uses(ix: ProgramIndex, bid: int, writers: list[int]) -> list[int]:
    """Tasks that read or write at least one element of ``bid`` (``writers``: its :func:`_writers`)."""
    readers = [r for r in ix.readers.get(bid, []) if not ix.read_region(r, bid).is_empty]
    return sorted(set(readers) | set(writers))


def _clobber(ix: ProgramIndex, pid: int, a: int, b: int, u: int, w: int) -> Diagnostic:
    return diag(
        PAGE_ALIAS,
        f"buffers {ix.buffer_name(a)} and {ix.buffer_name(b)} share page {pid} but task {ix.describe(w)} "
        f"writes {ix.buffer_name(b)} without being ordered after task {ix.describe(u)}, which uses "
        f"{ix.buffer_name(a)}: the write can clobber live data",
        tasks=ix.task_ids([u, w]),
        buffers=[a, b],
    )
