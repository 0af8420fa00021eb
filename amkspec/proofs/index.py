"""ProgramIndex: the lookups every proof obligation shares, built once per program (spec §2).

Tasks are graph nodes by **list position**, never by id: ids may be duplicated,
dangling or not ints in a broken program (the structure checks report that),
and the index must still be total. Buffer and counter references resolve through
``{id: record}`` maps where the first occurrence of an id wins. Only values whose
type is exactly ``int`` are ids (``True`` is not buffer 1).

Dependency edges follow spec §2: for every wait of task *b* on counter *c*, an
edge ``a → b`` for every producer *a* of *c*, regardless of the threshold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, TypeGuard

from amkspec.ir import Buffer, Counter, MegakernelProgram, Task, Wait
from amkspec.proofs.footprint import EMPTY, Memo, Region, TaskRegions, region_of, task_regions
from amkspec.proofs.reach import Reachability


def is_int(value: Any) -> TypeGuard[int]:
    """True for a plain int (bools and floats are not ids, counts or thresholds)."""
    return type(value) is int


def as_list(value: Any) -> list[Any]:
    """A list/tuple field as a list; anything else (a broken record) as empty."""
    return list(value) if isinstance(value, (list, tuple)) else []


def _first_by_id(records: Iterable[Any]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for rec in records:
        rid = getattr(rec, "id", None)
        if is_int(rid) and rid not in out:
            out[rid] = rec
    return out


class ProgramIndex:
    """Id maps, producers, readers, writers, edges and topological order of one program.

    ``waits[i]`` lists ``(index, counter, threshold)`` of the task's Wait records whose
    counter is an int. ``preds[i]``/``succs[i]`` are list positions, sorted, without self-edges;
    ``self_waiting`` holds the positions of tasks that wait on their own counter.
    ``topo`` is a topological order of positions (Kahn, FIFO, ascending seeds) or
    None when the graph has a cycle. ``rejected_tasks`` collects the positions of
    tasks a structure check rejected, so that later families skip them.
    """

    def __init__(self, prog: MegakernelProgram) -> None:
        self.prog = prog
        self.tasks: list[Task] = list(prog.tasks) if isinstance(prog.tasks, list) else []
        self.buffers: dict[int, Buffer] = _first_by_id(as_list(prog.buffers))
        self.counters: dict[int, Counter] = _first_by_id(as_list(prog.counters))
        n = len(self.tasks)
        self.n = n
        self.inputs: list[list[int]] = [[] for _ in range(n)]
        self.outputs: list[list[int]] = [[] for _ in range(n)]
        self.out_counter: list[int | None] = [None] * n
        self.waits: list[list[tuple[int, int, Any]]] = [[] for _ in range(n)]
        self.wait_counters: list[list[int]] = [[] for _ in range(n)]
        self.producers: dict[int, list[int]] = {}
        self.readers: dict[int, list[int]] = {}
        self.writers: dict[int, list[int]] = {}
        self.rejected_tasks: set[int] = set()
        self._index_tasks()
        self.preds: list[list[int]] = [[] for _ in range(n)]
        self.succs: list[list[int]] = [[] for _ in range(n)]
        self.self_waiting: list[int] = []
        self.n_edges = 0
        self._index_edges()
        self.topo: list[int] | None = kahn(n, self.preds, self.succs)
        self._reach: Reachability | None = None
        self._memo = Memo()
        self._regions: list[TaskRegions | None] = [None] * n
        self._writes: dict[int, list[Region]] = {}

    def _index_tasks(self) -> None:
        buffers, readers, writers, producers = self.buffers, self.readers, self.writers, self.producers
        for pos, task in enumerate(self.tasks):
            ins = _refs(getattr(task, "inputs", None), buffers)
            outs = _refs(getattr(task, "outputs", None), buffers)
            self.inputs[pos] = ins
            self.outputs[pos] = outs
            for b in ins:
                if b in readers:
                    readers[b].append(pos)
                else:
                    readers[b] = [pos]
            for b in outs:
                if b in writers:
                    writers[b].append(pos)
                else:
                    writers[b] = [pos]
            oc = getattr(task, "out_counter", None)
            if type(oc) is int:
                self.out_counter[pos] = oc
                if oc in producers:
                    producers[oc].append(pos)
                else:
                    producers[oc] = [pos]
            waits = getattr(task, "waits", None)
            if isinstance(waits, list) and waits:
                table = [
                    (i, w.counter, w.threshold)
                    for i, w in enumerate(waits)
                    if type(w) is Wait and type(w.counter) is int
                ]
                self.waits[pos] = table
                self.wait_counters[pos] = [c for _, c, _ in table]

    def _index_edges(self) -> None:
        producers, succs = self.producers, self.succs
        n_edges = 0
        for pos, counters in enumerate(self.wait_counters):
            if not counters:
                continue
            if len(counters) == 1:  # producer lists are distinct and in ascending position order
                preds = list(producers.get(counters[0], ()))
            else:
                preds = sorted({p for c in counters for p in producers.get(c, ())})
            if not preds:
                continue
            n_edges += len(preds)
            if pos in preds:
                preds.remove(pos)
                self.self_waiting.append(pos)
            self.preds[pos] = preds
            for p in preds:
                succs[p].append(pos)
        self.n_edges = n_edges

    def regions(self, pos: int) -> TaskRegions:
        """The footprint of the task at ``pos`` per operand position (:mod:`amkspec.proofs.footprint`)."""
        found = self._regions[pos]
        if found is None:
            found = self._regions[pos] = task_regions(self.tasks[pos], self.buffers, self._memo)
        return found

    def read_region(self, pos: int, bid: int) -> Region:
        """Elements of buffer ``bid`` the task at ``pos`` reads (spec §3.3)."""
        ids, reads, _, _ = self.regions(pos)
        return region_of(ids, reads, bid) if bid in ids else EMPTY

    def write_region(self, pos: int, bid: int) -> Region:
        """Elements of buffer ``bid`` the task at ``pos`` writes (spec §3.3)."""
        _, _, ids, writes = self.regions(pos)
        return region_of(ids, writes, bid) if bid in ids else EMPTY

    def write_regions(self, bid: int) -> list[Region]:
        """``write_region(w, bid)`` for every ``w`` in ``writers[bid]``, in that order (computed once)."""
        found = self._writes.get(bid)
        if found is None:
            found = self._writes[bid] = []
            regions = self.regions
            for w in self.writers.get(bid, ()):
                _, _, ids, writes = regions(w)  # ``bid`` is among ``ids``
                found.append(writes[0] if len(ids) == 1 else region_of(ids, writes, bid))
        return found

    @property
    def acyclic(self) -> bool:
        """No cycle through two or more tasks and no task waiting on its own counter."""
        return self.topo is not None and not self.self_waiting

    @property
    def reach(self) -> Reachability:
        """Happens-before queries over the DAG (requires ``topo``)."""
        if self._reach is None:
            if self.topo is None:
                raise ValueError("reachability needs an acyclic program")
            self._reach = Reachability(self.preds, self.topo)
        return self._reach

    @property
    def built_reach(self) -> Reachability | None:
        """The reachability engine if a check used it (for statistics), else None."""
        return self._reach

    def describe(self, pos: int) -> str:
        """``id:label`` of the task at ``pos`` (``id:OPNAME`` without a label)."""
        task = self.tasks[pos]
        label = getattr(task, "label", "")
        if not label:
            op = getattr(task, "op", None)
            label = getattr(op, "name", repr(op))
        return f"{getattr(task, 'id', '?')}:{label}"

    def describe_many(self, positions: Iterable[int], limit: int = 6) -> str:
        items = list(positions)
        text = ", ".join(self.describe(p) for p in items[:limit])
        return text + (f", … ({len(items)} in all)" if len(items) > limit else "")

    def task_id(self, pos: int) -> Any:
        return getattr(self.tasks[pos], "id", None)

    def task_ids(self, positions: Iterable[int]) -> list[Any]:
        return [self.task_id(p) for p in positions]

    def buffer_name(self, bid: int) -> str:
        """``id:name`` of a buffer (just the id when unknown)."""
        buf = self.buffers.get(bid)
        return f"{bid}:{buf.name}" if buf is not None else str(bid)


def _refs(value: Any, known: dict[int, Any]) -> list[int]:
    """The distinct known buffer ids of an inputs/outputs field, in order."""
    if not isinstance(value, (list, tuple)):
        return []
    refs = [v for v in value if type(v) is int and v in known]
    return refs if len(refs) < 2 or len(set(refs)) == len(refs) else list(dict.fromkeys(refs))


def kahn(n: int, preds: list[list[int]], succs: list[list[int]]) -> list[int] | None:
    """Kahn's algorithm over positions: FIFO queue seeded in ascending order; None on a cycle."""
    indeg = [len(p) for p in preds]
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order: list[int] = []
    append = order.append
    while queue:
        v = queue.popleft()
        append(v)
        for w in succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    return order if len(order) == n else None


def find_cycle(n: int, succs: list[list[int]]) -> list[int] | None:
    """One cycle as a list of positions (first node not repeated), by iterative DFS; None if acyclic."""
    state = [0] * n  # 0 unvisited, 1 on the stack, 2 done
    for root in range(n):
        if state[root]:
            continue
        path: list[int] = [root]
        iters = [iter(succs[root])]
        state[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt) :]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(succs[nxt]))
    return None
