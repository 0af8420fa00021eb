"""Happens-before queries over an acyclic dependency graph, near-linear in practice (spec §3.3).

The race obligations ask "is task *a* a strict ancestor of task *b*?" only for
specific pairs (a reader and another writer of its buffer, two writers, two page
occupants). :meth:`Reachability.ancestors` answers a batch of such pairs:

1. a pair whose topological rank is not increasing is rejected at once;
2. a direct dependency edge answers most of the rest;
3. a chain of first predecessors followed back from the target, at most :data:`_WALK`
   steps and never below the source's rank, answers a pair when it reaches the source (the
   first descent of the search of step 4; counted as one search);
4. the remaining pairs are answered by propagating *ancestor bitsets* (Python
   ints, one bit per queried source) forward over the window of the topological
   order between the first source and the last target. Sources whose windows do
   not overlap are handled in separate passes (each over its own short window),
   and a pass holds at most :data:`CHUNK` sources so memory stays bounded at any
   program size. A pass for one source and one target (a read that is ordered
   only transitively, as a residual read of the previous layer) is a depth-first
   search back from the target instead, over tasks ranked after the source, that
   stops at the source.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

CHUNK = 4096
"""Sources per bitset pass (bits per Python int)."""
_SCAN = 16
"""Predecessor lists up to this length are scanned for a direct edge; longer ones get a set."""
_WALK = 16
"""Steps of the chain of first predecessors followed back from a target before a pair is
left to a pass (bounded, so a long chain never costs more than a pass would)."""


class Reachability:
    """Strict-ancestor queries over positions, given predecessor lists and a topological order."""

    def __init__(
        self, preds: Sequence[Sequence[int]], topo: list[int], *, in_list_order: bool = False
    ) -> None:
        """``in_list_order``: the caller knows ``topo`` is ``[0, 1, ..., n - 1]`` (then every
        position is its own rank)."""
        self.preds = preds
        self.topo = topo
        if in_list_order:
            self.rank = topo
        else:
            rank = [0] * len(topo)
            for i, v in enumerate(topo):
                rank[v] = i
            self.rank = rank
        self._pred_sets: dict[int, frozenset[int]] = {}
        self.queries = 0
        self.bitset_passes = 0

    def is_direct(self, a: int, b: int) -> bool:
        preds = self.preds[b]
        if len(preds) <= _SCAN:
            return a in preds
        found = self._pred_sets.get(b)
        if found is None:
            found = self._pred_sets[b] = frozenset(preds)
        return a in found

    def ancestors(self, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        """The subset of ``pairs`` ``(a, b)`` where ``a`` strictly happens before ``b``."""
        rank, is_direct = self.rank, self.is_direct
        yes: set[tuple[int, int]] = set()
        pending: dict[int, set[int]] = defaultdict(set)
        queries = 0
        preds = self.preds
        walked = 0
        for a, b in pairs:
            queries += 1
            lo = rank[a]
            if lo >= rank[b] or (a, b) in yes:
                continue
            direct = preds[b]
            if a in direct if len(direct) <= _SCAN else is_direct(a, b):  # is_direct, inlined
                yes.add((a, b))
                continue
            # the first descent of :meth:`_search`, a few steps deep: a chain of first
            # predecessors (as a residual read of the previous layer) often ends at ``a``
            x, steps = b, _WALK
            while steps and (before := preds[x]):
                x = before[0]
                if x == a or rank[x] <= lo:
                    break
                steps -= 1
            if x == a:
                yes.add((a, b))
                walked += 1
            else:
                pending[a].add(b)
        self.queries += queries
        self.bitset_passes += walked
        chunk: list[int] = []
        chunk_hi = -1
        for s in sorted(pending, key=rank.__getitem__):
            if chunk and (rank[s] >= chunk_hi or len(chunk) >= CHUNK):
                yes.update(self._pass(chunk, pending))
                chunk, chunk_hi = [], -1
            chunk.append(s)
            chunk_hi = max(chunk_hi, *(rank[t] for t in pending[s]))
        if chunk:
            yes.update(self._pass(chunk, pending))
        return yes

    def _pass(self, sources: list[int], targets: dict[int, set[int]]) -> set[tuple[int, int]]:
        """Answer ``(s, t)`` for ``s`` in ``sources``: one search for one pair, else a bitset pass."""
        if len(sources) == 1 and len(targets[sources[0]]) == 1:
            (s,) = sources
            (t,) = targets[s]
            return {(s, t)} if self._search(s, t) else set()
        return self._propagate(sources, targets)

    def _search(self, s: int, t: int) -> bool:
        """Whether ``s`` is an ancestor of ``t``: depth first back from ``t`` over tasks ranked after
        ``s`` (one predecessor followed at a time: a chain of first predecessors often ends at ``s``)."""
        self.bitset_passes += 1
        rank, preds = self.rank, self.preds
        lo = rank[s]
        seen = {t}
        stack = [iter(preds[t])]
        while stack:
            p = next(stack[-1], None)
            if p is None:
                stack.pop()
            elif p == s:
                return True
            elif rank[p] > lo and p not in seen:
                seen.add(p)
                stack.append(iter(preds[p]))
        return False

    def _propagate(self, sources: list[int], targets: dict[int, set[int]]) -> set[tuple[int, int]]:
        """Answer ``(s, t)`` for ``s`` in ``sources`` by one forward bitset pass over the window."""
        self.bitset_passes += 1
        rank, topo, preds = self.rank, self.topo, self.preds
        lo = rank[sources[0]]
        hi = max(rank[t] for s in sources for t in targets[s])
        seed = {rank[s]: 1 << i for i, s in enumerate(sources)}
        reach = [0] * (hi - lo + 1)
        for r in range(lo, hi + 1):
            bits = seed.get(r, 0)
            for p in preds[topo[r]]:
                pr = rank[p]
                if pr >= lo:
                    bits |= reach[pr - lo]
            reach[r - lo] = bits
        found: set[tuple[int, int]] = set()
        for i, s in enumerate(sources):
            for t in targets[s]:
                # reach includes the node's own seed bit; rank[s] < rank[t] so t's bit i is ancestry
                if reach[rank[t] - lo] >> i & 1:
                    found.add((s, t))
        return found
