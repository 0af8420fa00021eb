"""The strongest certificate an adversary can write for any program, valid or not.

``forge`` claims a path between every two tasks that use one buffer, through *any*
dependency edge (whatever the threshold), a list order when no execution completes, and
pages in any order. The checker must refuse it whenever ``validate`` rejects the program.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from amkspec.evidence.certificate_check import FORMAT, VERSION, CertificateRefused, check_certificate
from amkspec.ir import MegakernelProgram
from amkspec.ir.jsonio import program_sha256


def rebind(cert: Any, prog: MegakernelProgram) -> Any:
    """The certificate with its hash replaced by ``prog``'s (anyone can compute a hash)."""
    if not isinstance(cert, dict):
        return cert
    out = copy.deepcopy(cert)
    out["program_sha256"] = program_sha256(prog)
    return out


def refused(prog: MegakernelProgram, cert: Any) -> bool:
    """Whether the checker refuses ``cert``, rebound to ``prog``, for ``prog``."""
    try:
        check_certificate(prog, rebind(cert, prog))
    except CertificateRefused:
        return True
    return False


def _ids(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def forge(prog: MegakernelProgram) -> dict[str, Any]:
    """A certificate claiming everything the program's edges could possibly support."""
    tasks = [t for t in prog.tasks if type(getattr(t, "id", None)) is int]
    producers: dict[Any, list[int]] = {}
    for t in tasks:
        producers.setdefault(t.out_counter, []).append(t.id)
    preds = {
        t.id: {p for w in _ids(t.waits) for p in producers.get(getattr(w, "counter", None), [])}
        for t in tasks
    }
    users: dict[Any, list[int]] = {}
    for t in tasks:
        for b in (*_ids(t.inputs), *_ids(t.outputs)):
            users.setdefault(b, []).append(t.id)
    paths = []
    for dst in preds:
        tree = {dst: dst}
        queue = deque([dst])
        while queue:
            node = queue.popleft()
            for p in preds.get(node, ()):
                if p not in tree:
                    tree[p] = node
                    queue.append(p)
        wanted = {u for us in users.values() if dst in us for u in us} - {dst}
        for src in sorted(wanted & tree.keys()):
            path = [src]
            while path[-1] != dst:
                path.append(tree[path[-1]])
            paths.append(path)
    init = {c.id: c.init for c in prog.counters if type(getattr(c, "init", None)) is int}
    order = _greedy_order(tasks, init)
    pages: list[dict[str, Any]] = []
    alloc = prog.pages
    if alloc is not None and isinstance(alloc.buffer_to_page, dict):
        by_page: dict[Any, list[Any]] = {}
        for bid, pid in alloc.buffer_to_page.items():
            if bid in users:
                by_page.setdefault(pid, []).append(bid)
        first = {tid: n for n, tid in enumerate(order)}
        for pid, bids in by_page.items():
            bids.sort(key=lambda b: min(first.get(u, 0) for u in users[b]))
            pages.append({"page": pid, "occupants": bids})
    return {
        "format": FORMAT,
        "version": VERSION,
        "program_sha256": program_sha256(prog),
        "order": order,
        "paths": paths,
        "pages": pages,
    }


def _greedy_order(tasks: list[Any], init: dict[Any, int]) -> list[int]:
    """Start whatever can start (counters with their init), then the rest in list order."""
    value = dict(init)
    done: list[int] = []
    left = list(tasks)
    progress = True
    while left and progress:
        progress = False
        for t in list(left):
            if all(value.get(w.counter, 0) >= w.threshold for w in _ids(t.waits) if hasattr(w, "counter")):
                done.append(t.id)
                value[t.out_counter] = value.get(t.out_counter, 0) + 1
                left.remove(t)
                progress = True
    return done + [t.id for t in left]
