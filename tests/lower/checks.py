"""Independent checks of the lowering's scheduling outputs (naive reachability, no shared code)."""

from __future__ import annotations

from amkspec.ir import BufferKind, MegakernelProgram


def reachable(prog: MegakernelProgram) -> dict[int, set[int]]:
    """Task id → ids strictly reachable through counters (depth-first search per task)."""
    producers: dict[int, list[int]] = {}
    for t in prog.tasks:
        producers.setdefault(t.out_counter, []).append(t.id)
    succ: dict[int, set[int]] = {t.id: set() for t in prog.tasks}
    for t in prog.tasks:
        for w in t.waits:
            for p in producers.get(w.counter, []):
                if p != t.id:
                    succ[p].add(t.id)
    out: dict[int, set[int]] = {}
    for start in succ:
        seen: set[int] = set()
        stack = list(succ[start])
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(succ[n])
        out[start] = seen
    return out


def sm_queue_violations(prog: MegakernelProgram) -> list[tuple[int, int]]:
    """Pairs (a, b) on one SM where b is queued before a although a ⇝ b (cross-SM paths included)."""
    reach = reachable(prog)
    bad = []
    for i, early in enumerate(prog.tasks):
        for late in prog.tasks[i + 1:]:
            if early.sm is not None and early.sm == late.sm and early.id in reach[late.id]:
                bad.append((late.id, early.id))
    return bad


def page_clobbers(prog: MegakernelProgram) -> list[tuple[int, int]]:
    """Buffer pairs sharing a page with neither "every use of one before every write of the other"."""
    assert prog.pages is not None
    reach = reachable(prog)
    uses: dict[int, set[int]] = {}
    writes: dict[int, set[int]] = {}
    for t in prog.tasks:
        for b in t.inputs + t.outputs:
            uses.setdefault(b, set()).add(t.id)
        for b in t.outputs:
            writes.setdefault(b, set()).add(t.id)

    def before(a: int, b: int) -> bool:
        return all(w in reach[u] for u in uses.get(a, ()) for w in writes.get(b, ()))

    bad = []
    kinds = {b.id: b.kind for b in prog.buffers}
    items = sorted(prog.pages.buffer_to_page.items())
    for i, (a, pa) in enumerate(items):
        assert kinds[a] is BufferKind.ACTIVATION
        for b, pb in items[i + 1:]:
            if pa == pb and not (before(a, b) or before(b, a)):
                bad.append((a, b))
    return bad
