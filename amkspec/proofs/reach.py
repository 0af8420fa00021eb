"""Happens-before queries over an acyclic dependency graph, near-linear in practice (spec §3.3).

The race obligations ask "is task *a* a strict ancestor of task *b*?" only for
specific pairs (a reader and another writer of its buffer, two writers, two page
occupants). :meth:`Reachability.ancestors` answers a batch of such pairs:

1. a pair whose topological rank is not increasing is rejected at once;
2. a direct dependency edge answers most of the rest;
3. the remaining pairs are answered by propagating *ancestor bitsets* (Python
   ints, one bit per queried source) forward over the window of the topological
   order between the first source and the last target. Sources whose windows do
   not overlap are handled in separate passes (each over its own short window),
   and a pass holds at most :data:`CHUNK` sources so memory stays bounded at any
   program size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

CHUNK = 4096
"""Sources per bitset pass (bits per Python int)."""


class Reachability:
    """Strict-ancestor queries over positions, given predecessor lists and a topological order."""

    def __init__(self, preds: Sequence[Sequence[int]], topo: list[int]) -> None:
        self.preds = preds
        self.topo = topo
        rank = [0] * len(topo)
        for i, v in enumerate(topo):
            rank[v] = i
        self.rank = rank
        self._pred_sets: list[frozenset[int]] | None = None
        self._pred_ranks: list[list[int]] | None = None
        self.queries = 0
        self.bitset_passes = 0

    def is_direct(self, a: int, b: int) -> bool:
        if self._pred_sets is None:
            self._pred_sets = [frozenset(p) for p in self.preds]
        return a in self._pred_sets[b]

    def ancestors(self, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        """The subset of ``pairs`` ``(a, b)`` where ``a`` strictly happens before ``b``."""
        rank = self.rank
        yes: set[tuple[int, int]] = set()
        pending: dict[int, set[int]] = defaultdict(set)
        for a, b in pairs:
            self.queries += 1
            if rank[a] >= rank[b] or (a, b) in yes:
                continue
            if self.is_direct(a, b):
                yes.add((a, b))
            else:
                pending[a].add(b)
        chunk: list[int] = []
        chunk_hi = -1
        for s in sorted(pending, key=rank.__getitem__):
            if chunk and (rank[s] >= chunk_hi or len(chunk) >= CHUNK):
                yes.update(self._propagate(chunk, pending))
                chunk, chunk_hi = [], -1
            chunk.append(s)
            chunk_hi = max(chunk_hi, *(rank[t] for t in pending[s]))
        if chunk:
            yes.update(self._propagate(chunk, pending))
        return yes

    def _propagate(self, sources: list[int], targets: dict[int, set[int]]) -> set[tuple[int, int]]:
        """Answer ``(s, t)`` for ``s`` in ``sources`` by one forward bitset pass over the window."""
        self.bitset_passes += 1
        rank, topo = self.rank, self.topo
        if self._pred_ranks is None:
            self._pred_ranks = [[rank[p] for p in self.preds[v]] for v in topo]
        pred_ranks = self._pred_ranks
        lo = rank[sources[0]]
        hi = max(rank[t] for s in sources for t in targets[s])
        seed = {rank[s]: 1 << i for i, s in enumerate(sources)}
        reach = [0] * (hi - lo + 1)
        for r in range(lo, hi + 1):
            bits = seed.get(r, 0)
            for pr in pred_ranks[r]:
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
