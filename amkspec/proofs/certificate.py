"""Certificates: a compact, independently checkable proof that an accepted program is safe.

A certificate (spec §3) holds

* ``program_sha256``: the hash of the program's canonical JSON, so it cannot be
  replayed against another program;
* ``order``: every task id once, in an order that is a complete execution
  (each task's waits are met by producers earlier in the order, its SM-queue
  predecessor is earlier). Counters only grow, so from any reachable state
  the first not-yet-started task of this order can eventually start: the
  program cannot deadlock;
* ``reads``: for each read of a transient buffer and each other writer of it,
  a happens-before path from the writer to the reader;
* ``writes``: for each pair of writers with overlapping footprints, a path
  from one to the other;
* ``pages``: for each pair of buffers on one page, the occupant that comes
  first and a path from each of its uses to each writer of the other.

A path is a list of task ids; each hop ``a → b`` is either a counter edge on
which ``b`` waits for *all* producers (threshold ≥ producer count, so ``a``
ended before ``b`` started) or an SM-queue edge (same SM, ``a`` earlier in the
task list). :func:`check_certificate` verifies all of this in time linear in
the program plus the certificate, without trusting anything that built it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter as Tally
from collections import deque
from collections.abc import Iterator
from typing import Any

import attrs

from amkspec.ir import READONLY_KINDS, InstructionKind, MegakernelProgram, dumps

FORMAT = "amkspec-certificate"
VERSION = 1


class CertificateError(ValueError):
    """A certificate does not prove what it claims for this program (or cannot be built)."""


def program_hash(prog: MegakernelProgram) -> str:
    """SHA-256 of the program's canonical JSON (spec §6): binds a certificate to one program."""
    return hashlib.sha256(dumps(prog).encode()).hexdigest()


@attrs.define
class _Index:
    """Shared by builder and checker: who reads/writes what, and the hop relation."""

    prog: MegakernelProgram
    pos: dict[int, int] = attrs.field(init=False)
    nprod: Tally[int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.pos = {}
        for n, t in enumerate(self.prog.tasks):
            if type(t.id) is not int or t.id in self.pos:
                raise CertificateError(f"task ids are not unique integers (at position {n})")
            self.pos[t.id] = n
        self.nprod = Tally(t.out_counter for t in self.prog.tasks)

    def task(self, tid: int) -> Any:
        return self.prog.tasks[self.pos[tid]]

    def hop(self, a: int, b: int) -> bool:
        """``a`` ends before ``b`` starts in every execution, by one edge."""
        ta, tb = self.task(a), self.task(b)
        if any(w.counter == ta.out_counter and w.threshold >= self.nprod[w.counter] for w in tb.waits):
            return True
        return type(ta.sm) is int and ta.sm == tb.sm and self.pos[a] < self.pos[b]

    def users(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        readers: dict[int, list[int]] = {}
        writers: dict[int, list[int]] = {}
        for t in self.prog.tasks:
            for b in dict.fromkeys(t.inputs):
                readers.setdefault(b, []).append(t.id)
            for b in dict.fromkeys(t.outputs):
                writers.setdefault(b, []).append(t.id)
        return readers, writers


def _span(task: Any) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    def rng(off: str, size: str) -> tuple[int, int] | None:
        lo, n = task.params.get(off), task.params.get(size)
        return (lo, lo + n) if type(lo) is int and type(n) is int and lo >= 0 and n > 0 else None

    cols = (
        rng("n_off", "N_tile") if task.op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE) else None
    )
    rows = rng("m_off", "M_tile") if task.op is InstructionKind.GEMM_TILE and cols else None
    return rows, cols


def _meets(x: tuple[int, int] | None, y: tuple[int, int] | None) -> bool:
    return x is None or y is None or (x[0] < y[1] and y[0] < x[1])


def obligations(prog: MegakernelProgram, ix: _Index) -> Iterator[tuple[str, int, int, int]]:
    """(kind, buffer, before, after): every ordering the certificate must justify, in either
    direction for ``"write"``.

    Spec §3.2.
    """
    kinds = {b.id: b.kind for b in prog.buffers}
    readers, writers = ix.users()
    for buf in sorted(set(readers) | set(writers), key=repr):
        if buf not in kinds or kinds[buf] in READONLY_KINDS:
            continue
        ws = writers.get(buf, [])
        for r in readers.get(buf, []):
            yield from (("read", buf, w, r) for w in ws if w != r)
        for n, a in enumerate(ws):
            for b in ws[n + 1 :]:
                sa, sb = _span(ix.task(a)), _span(ix.task(b))
                if _meets(sa[0], sb[0]) and _meets(sa[1], sb[1]):
                    yield ("write", buf, a, b)


def _page_pairs(prog: MegakernelProgram) -> list[tuple[int, int, int]]:
    if prog.pages is None:
        return []
    by_page: dict[int, list[int]] = {}
    for buf, page in sorted(prog.pages.buffer_to_page.items()):
        by_page.setdefault(page, []).append(buf)
    return [
        (p, a, b) for p, bufs in sorted(by_page.items()) for n, a in enumerate(bufs) for b in bufs[n + 1 :]
    ]


# -- building ------------------------------------------------------------------------------------


def _hb_preds(ix: _Index) -> dict[int, list[int]]:
    prods: dict[int, list[int]] = {}
    for t in ix.prog.tasks:
        prods.setdefault(t.out_counter, []).append(t.id)
    last: dict[int, int] = {}
    preds: dict[int, list[int]] = {}
    for t in ix.prog.tasks:
        preds[t.id] = [
            p for w in t.waits if w.threshold >= ix.nprod[w.counter] for p in prods.get(w.counter, [])
        ]
        if type(t.sm) is int:
            if t.sm in last:
                preds[t.id].append(last[t.sm])
            last[t.sm] = t.id
    return preds


class _Paths:
    """Shortest happens-before paths into a target, one backward search per target."""

    def __init__(self, preds: dict[int, list[int]]) -> None:
        self.preds = preds
        self.trees: dict[int, dict[int, int]] = {}

    def path(self, src: int, dst: int) -> list[int] | None:
        if dst not in self.trees:
            tree = {dst: dst}
            queue = deque([dst])
            while queue:
                n = queue.popleft()
                for p in self.preds[n]:
                    if p not in tree:
                        tree[p] = n
                        queue.append(p)
            self.trees[dst] = tree
        tree = self.trees[dst]
        if src == dst or src not in tree:
            return None
        out = [src]
        while out[-1] != dst:
            out.append(tree[out[-1]])
        return out


def _execution_order(ix: _Index) -> list[int]:
    prods: dict[int, list[int]] = {}
    for t in ix.prog.tasks:
        prods.setdefault(t.out_counter, []).append(t.id)
    value: Tally[int] = Tally()
    last: dict[int, int] = {}
    prev: dict[int, int] = {}
    for t in ix.prog.tasks:
        if type(t.sm) is int:
            if t.sm in last:
                prev[t.id] = last[t.sm]
            last[t.sm] = t.id
    waiting = deque(t.id for t in ix.prog.tasks)
    order: list[int] = []
    done: set[int] = set()
    stalled = 0
    while waiting and stalled <= len(waiting):
        tid = waiting.popleft()
        t = ix.task(tid)
        if (tid not in prev or prev[tid] in done) and all(value[w.counter] >= w.threshold for w in t.waits):
            order.append(tid)
            done.add(tid)
            value[t.out_counter] += 1
            stalled = 0
        else:
            waiting.append(tid)
            stalled += 1
    if waiting:
        raise CertificateError(f"no complete execution: task {waiting[0]} can never start")
    return order


def certify(prog: MegakernelProgram) -> dict[str, Any]:
    """Build the certificate of ``prog``; raises :class:`CertificateError` if some obligation has no proof.

    Spec §3.
    """
    ix = _Index(prog)
    paths = _Paths(_hb_preds(ix))
    cert: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "program_sha256": program_hash(prog),
        "order": _execution_order(ix),
        "reads": [],
        "writes": [],
        "pages": [],
    }
    for kind, buf, a, b in obligations(prog, ix):
        path = paths.path(a, b) or (paths.path(b, a) if kind == "write" else None)
        if path is None:
            raise CertificateError(
                f"{kind} of buffer {buf}: no happens-before path between tasks {a} and {b}"
            )
        key = ("writer", "reader") if kind == "read" else ("first", "second")
        cert[kind + "s"].append({"buffer": buf, key[0]: a, key[1]: b, "path": path})
    readers, writers = ix.users()
    for page, x, y in _page_pairs(prog):
        for first, second in ((x, y), (y, x)):
            uses = list(dict.fromkeys(readers.get(first, []) + writers.get(first, [])))
            found = [(u, v, paths.path(u, v)) for u in uses for v in writers.get(second, [])]
            if all(p is not None for _, _, p in found):
                cert["pages"].append(
                    {"page": page, "first": first, "then": second, "paths": [p for _, _, p in found]}
                )
                break
        else:
            raise CertificateError(f"page {page}: the live ranges of buffers {x} and {y} are not ordered")
    return cert


# -- the independent checker ---------------------------------------------------------------------


def _check_path(ix: _Index, path: Any, src: int, dst: int) -> None:
    if not isinstance(path, list) or len(path) < 2 or path[0] != src or path[-1] != dst:
        raise CertificateError(f"path {path!r} does not lead from task {src} to task {dst}")
    for a, b in itertools.pairwise(path):
        if a not in ix.pos or b not in ix.pos or not ix.hop(a, b):
            raise CertificateError(f"path from {src} to {dst}: {a} -> {b} is not a happens-before edge")


def _check_order(ix: _Index, order: Any) -> None:
    if not isinstance(order, list) or sorted(order, key=repr) != sorted(ix.pos, key=repr):
        raise CertificateError("order is not a permutation of the task ids")
    at = {tid: n for n, tid in enumerate(order)}
    value: Tally[int] = Tally()
    last: dict[int, int] = {}
    for tid in ix.pos:
        t = ix.task(tid)
        if type(t.sm) is int:
            if t.sm in last and at[last[t.sm]] > at[tid]:
                raise CertificateError(f"order runs task {tid} before its SM queue predecessor")
            last[t.sm] = tid
    for tid in order:
        t = ix.task(tid)
        for w in t.waits:
            if value[w.counter] < w.threshold:
                raise CertificateError(f"order starts task {tid} while counter {w.counter} < {w.threshold}")
        value[t.out_counter] += 1


def check_certificate(prog: MegakernelProgram, cert: Any) -> None:
    """Verify ``cert`` against ``prog``; raises :class:`CertificateError` with the first problem (spec §3)."""
    try:
        _check(prog, cert)
    except (KeyError, TypeError, AttributeError) as exc:
        raise CertificateError(f"malformed certificate: {exc!r}") from exc


def _check(prog: MegakernelProgram, cert: Any) -> None:
    if not isinstance(cert, dict) or cert.get("format") != FORMAT or cert.get("version") != VERSION:
        raise CertificateError("not an amkspec certificate of a supported version")
    if cert.get("program_sha256") != program_hash(prog):
        raise CertificateError("the certificate was made for a different program")
    ix = _Index(prog)
    _check_order(ix, cert["order"])
    given: dict[tuple[str, int, int, int], Any] = {}
    for e in cert["reads"]:
        given[("read", e["buffer"], e["writer"], e["reader"])] = e["path"]
    for e in cert["writes"]:
        given[("write", e["buffer"], e["first"], e["second"])] = e["path"]
    for kind, buf, a, b in obligations(prog, ix):
        key = (kind, buf, a, b)
        if key not in given:
            raise CertificateError(f"no justification for the {kind} ({a}, {b}) of buffer {buf}")
        path = given[key]
        forward = isinstance(path, list) and bool(path) and path[0] == a
        _check_path(ix, path, a if forward or kind == "read" else b, b if forward or kind == "read" else a)
    _check_pages(prog, ix, cert["pages"])


def _check_pages(prog: MegakernelProgram, ix: _Index, entries: list[Any]) -> None:
    readers, writers = ix.users()
    by_pair = {(e["page"], frozenset((e["first"], e["then"]))): e for e in entries}
    for page, x, y in _page_pairs(prog):
        e = by_pair.get((page, frozenset((x, y))))
        if e is None or {e["first"], e["then"]} != {x, y}:
            raise CertificateError(f"page {page}: no ordering of buffers {x} and {y}")
        uses = list(dict.fromkeys(readers.get(e["first"], []) + writers.get(e["first"], [])))
        need = [(u, v) for u in uses for v in writers.get(e["then"], [])]
        if len(e["paths"]) != len(need):
            raise CertificateError(f"page {page}: expected {len(need)} paths")
        for (u, v), path in zip(need, e["paths"], strict=False):
            _check_path(ix, path, u, v)
