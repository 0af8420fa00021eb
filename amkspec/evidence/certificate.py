"""Certificates: a compact proof that an accepted program is safe, built in near-linear time.

A certificate (spec §3) is a JSON object:

* ``format``, ``version``; ``program_sha256``: the hash of the program's canonical JSON;
* ``order``: every task id once, in the order of one complete execution (each task's
  waits met by the tasks before it, each SM's queue in task-list order). Counters only
  grow, so from any reachable state the first unstarted task of this order can start:
  the program cannot deadlock (spec §3.2);
* ``paths``: happens-before evidence, each a list of task ids where every hop ``a → b``
  is a dependency edge on which ``b`` waits for *every* producer of ``a``'s counter.
  There is one path for each ordering the program needs (spec §3.3): every writer of
  elements a task reads, before that reader; one of each two writers of overlapping
  elements, before the other; each writer of a buffer whose writers signal different
  counters, before the next (a total order); every use of a page occupant, before every write of the
  next occupant (spec §3.3);
* ``pages``: for each page, its occupants in use, in the order their live ranges come.

Which elements a task reads and writes comes from the one footprint package,
:mod:`amkspec.footprint`. The certificate is verified by
:mod:`amkspec.evidence.certificate_check`, which shares none of this code.

Building costs O(V + E) for the order, plus one backward search per task that needs a
path longer than one hop, confined to the window of the order between its earliest
source and itself: near-linear on programs whose dependencies are local (layers, chains).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any

from amkspec.footprint import Region, task_footprint, uncovered, whole
from amkspec.ir import READONLY_KINDS, Buffer, BufferKind, MegakernelProgram
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.jsonio import program_sha256

FORMAT = "amkspec-certificate"
VERSION = 2


class CertificateError(ValueError):
    """No certificate can be built: some obligation of the program has no proof."""


class _Graph:
    """Tasks by list position, the full-join dependency edges, and one execution order."""

    def __init__(self, prog: MegakernelProgram) -> None:
        self.tasks = list(prog.tasks)
        self.ids = [t.id for t in self.tasks]
        if len(set(self.ids)) != len(self.ids) or not all(type(i) is int for i in self.ids):
            raise CertificateError("task ids are not unique ints")
        self.init = {c.id: c.init for c in prog.counters}
        self.producers: dict[int, list[int]] = {}
        for pos, t in enumerate(self.tasks):
            self.producers.setdefault(t.out_counter, []).append(pos)
        self.joins: list[list[int]] = [
            [
                w.counter
                for w in t.waits
                if w.threshold - self.init.get(w.counter, 0) >= len(self.producers.get(w.counter, ()))
            ]
            for t in self.tasks
        ]
        self.order = self._execution_order()
        self.rank = [0] * len(self.tasks)
        for r, pos in enumerate(self.order):
            self.rank[pos] = r

    def _execution_order(self) -> list[int]:
        """One complete execution, event-driven (each counter's waiters bucketed by threshold)."""
        n = len(self.tasks)
        pending = [0] * n
        buckets: dict[int, dict[int, list[int]]] = {}
        value = dict(self.init)
        previous: dict[int, int] = {}
        following: dict[int, int] = {}
        last: dict[int, int] = {}
        for pos, t in enumerate(self.tasks):
            if t.sm is not None:
                if t.sm in last:
                    previous[pos], following[last[t.sm]] = last[t.sm], pos
                    pending[pos] += 1
                last[t.sm] = pos
            for w in t.waits:
                if value.get(w.counter, 0) < w.threshold:
                    pending[pos] += 1
                    buckets.setdefault(w.counter, {}).setdefault(w.threshold, []).append(pos)
        ready = deque(pos for pos in range(n) if pending[pos] == 0)
        order: list[int] = []
        while ready:
            pos = ready.popleft()
            order.append(pos)
            c = self.tasks[pos].out_counter
            value[c] = value.get(c, 0) + 1
            released = buckets.get(c, {}).pop(value[c], [])
            if pos in following:
                released = [*released, following[pos]]
            for nxt in released:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    ready.append(nxt)
        if len(order) < n:
            stuck = next(pos for pos in range(n) if pending[pos])
            raise CertificateError(f"no complete execution: task {self.ids[stuck]} can never start")
        return order

    def paths_into(self, dst: int, sources: set[int]) -> Iterator[list[int]]:
        """A happens-before path from each source to ``dst`` (positions), by one backward
        search over the window of the order above the earliest source."""
        floor = min(self.rank[s] for s in sources)
        parent = {dst: dst}
        left = set(sources)
        queue = deque([dst])
        seen_counters: set[int] = set()
        while queue and left:
            node = queue.popleft()
            for c in self.joins[node]:
                if c in seen_counters:
                    continue
                seen_counters.add(c)
                for p in self.producers.get(c, ()):
                    if p not in parent and self.rank[p] >= floor:
                        parent[p] = node
                        left.discard(p)
                        queue.append(p)
        if left:
            src = min(left)
            raise CertificateError(f"task {self.ids[src]} is not ordered before task {self.ids[dst]}")
        for src in sources:
            path = [src]
            while path[-1] != dst:
                path.append(parent[path[-1]])
            yield [self.ids[p] for p in path]


Uses = dict[int, list[tuple[int, Region]]]


def _regions(prog: MegakernelProgram, g: _Graph) -> tuple[dict[int, Buffer], Uses, Uses]:
    buffers = {b.id: b for b in prog.buffers}
    reads: Uses = {}
    writes: Uses = {}
    for pos, t in enumerate(g.tasks):
        fp = task_footprint(t, buffers)
        for bid, region in fp.reads.items():
            if not region.is_empty:
                reads.setdefault(bid, []).append((pos, region))
        for bid, region in fp.writes.items():
            if not region.is_empty:
                writes.setdefault(bid, []).append((pos, region))
    return buffers, reads, writes


def _needs(g: _Graph, buffers: dict[int, Buffer], reads: Uses, writes: Uses) -> dict[int, set[int]]:
    """target position → source positions that must happen before it (spec §3.3)."""
    need: dict[int, set[int]] = {}
    for bid, buf in buffers.items():
        if buf.kind in READONLY_KINDS:
            if bid in writes:
                raise CertificateError(f"buffer {bid} of read-only kind {buf.kind.name} is written")
            continue
        ws = writes.get(bid, [])
        users: list[tuple[int | None, Region]] = list(reads.get(bid, []))
        if buf.kind is BufferKind.IO_OUTPUT:
            users.append((None, whole(buf.shape)))
        for reader, region in users:
            before = [(w, wr) for w, wr in ws if w != reader and wr.overlaps(region)]
            if buf.kind is not BufferKind.KV_CACHE and uncovered(region, [wr for _, wr in before], buf.shape):
                who = "the host" if reader is None else f"task {g.ids[reader]}"
                raise CertificateError(f"{who} reads elements of buffer {bid} that no other task writes")
            if reader is not None:
                need.setdefault(reader, set()).update(w for w, _ in before)
        for a, b in _overlapping(ws):
            first, then = (a, b) if g.rank[a] < g.rank[b] else (b, a)
            need.setdefault(then, set()).add(first)
        chain = sorted({w for w, _ in ws}, key=g.rank.__getitem__)
        if len({g.tasks[w].out_counter for w in chain}) > 1:  # a counter cannot tell them apart
            for a, b in itertools.pairwise(chain):
                need.setdefault(b, set()).add(a)
    return need


def _overlapping(ws: list[tuple[int, Region]]) -> Iterator[tuple[int, int]]:
    """Pairs of writers whose regions share an element (a sweep over the last axis)."""
    spans = []
    for w, region in ws:
        boxes = region.boxes
        lo = min((b[-1][0] for b in boxes if b), default=0) if boxes is not None else 0
        hi = max((b[-1][1] for b in boxes if b), default=1) if boxes is not None else 1 << 62
        spans.append((lo, hi, w, region))
    spans.sort(key=lambda s: s[0])
    active: list[tuple[int, int, int, Region]] = []
    for span in spans:
        active = [a for a in active if a[1] > span[0]]
        yield from ((a[2], span[2]) for a in active if a[3].overlaps(span[3]))
        active.append(span)


def _page_needs(
    prog: MegakernelProgram, g: _Graph, reads: Uses, writes: Uses, need: dict[int, set[int]]
) -> list[dict[str, Any]]:
    """Occupants of each page in live-range order; every use of one before every write of the
    next (spec §3.3)."""
    if prog.pages is None:
        return []
    by_page: dict[int, list[int]] = {}
    for bid, pid in prog.pages.buffer_to_page.items():
        if bid in reads or bid in writes:
            by_page.setdefault(pid, []).append(bid)
    out = []
    for pid, bids in sorted(by_page.items()):
        if any(b not in writes for b in bids):
            raise CertificateError(f"page {pid}: an occupant is read but never written")
        bids.sort(key=lambda b: min(g.rank[w] for w, _ in writes[b]))
        for x, y in itertools.pairwise(bids):
            for u, _ in (*reads.get(x, []), *writes[x]):
                for w, _ in writes[y]:
                    if u == w:
                        raise CertificateError(
                            f"page {pid}: task {g.ids[u]} uses buffers {x} and {y} at once"
                        )
                    need.setdefault(w, set()).add(u)
        out.append({"page": pid, "occupants": bids})
    return out


def certify(prog: MegakernelProgram) -> dict[str, Any]:
    """Build the certificate of ``prog``; raises :class:`CertificateError` if some obligation has no proof.

    Spec §3. The cyclic garbage collector is paused meanwhile (bulk allocation of acyclic data).
    """
    with gc_paused():
        return _certify(prog)


def _certify(prog: MegakernelProgram) -> dict[str, Any]:
    g = _Graph(prog)
    buffers, reads, writes = _regions(prog, g)
    need = _needs(g, buffers, reads, writes)
    pages = _page_needs(prog, g, reads, writes, need)
    paths: list[list[int]] = []
    for dst in sorted(need, key=g.rank.__getitem__):
        direct = {p for c in g.joins[dst] for p in g.producers.get(c, ())}
        sources = need[dst] - {dst}
        paths.extend([g.ids[s], g.ids[dst]] for s in sorted(sources & direct))
        if sources - direct:
            paths.extend(g.paths_into(dst, sources - direct))
    return {
        "format": FORMAT,
        "version": VERSION,
        "program_sha256": program_sha256(prog),
        "order": [g.ids[p] for p in g.order],
        "paths": paths,
        "pages": pages,
    }
