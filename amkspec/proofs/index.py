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

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any, TypeGuard

from amkspec.ir import Buffer, Counter, MegakernelProgram, Task, Wait
from amkspec.proofs.columns import TaskColumns, task_columns
from amkspec.proofs.footprint import (
    EMPTY,
    KEYED_MIN_TASKS,
    Memo,
    Region,
    TaskRegions,
    all_task_regions,
    region_of,
    task_regions,
)
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
    ``self_waiting`` holds the positions of tasks that wait on their own counter;
    ``forward`` is True when every edge goes from a lower to a higher list position (the
    task list itself is then a topological order, as in every lowered program).
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
        self.inputs: list[list[int]] = []
        self.outputs: list[list[int]] = []
        self.out_counter: list[int | None] = []
        self.waits: list[Sequence[tuple[int, int, Any]]] = [()] * n
        self.wait_counters: list[Sequence[int]] = [()] * n
        self.producers: dict[int, list[int]] = {}
        self.readers: dict[int, list[int]] = {}
        self.writers: dict[int, list[int]] = {}
        self.rejected_tasks: set[int] = set()
        self.preds: list[Sequence[int]] = [()] * n
        self.succs: list[Sequence[int]] = [()] * n
        self.self_waiting: list[int] = []
        self.n_edges = 0
        self.forward = True
        self._index_tasks()
        self.topo: list[int] | None = kahn(n, self.preds, self.succs)
        self._reach: Reachability | None = None
        self._memo = Memo()
        self._regions: list[TaskRegions | None] = [None] * n
        self._batched = False
        self._writes: dict[int, list[Region]] = {}

    def _index_tasks(self) -> None:
        """Operands, readers/writers and producers of every task (spec §2), a column at a time."""
        tasks = self.tasks
        ins: list[Any]
        outs: list[Any]
        ocs: list[Any]
        waits: list[Any]
        if {*map(type, tasks)} <= {Task}:
            ins, outs = [t.inputs for t in tasks], [t.outputs for t in tasks]
            ocs, waits = [t.out_counter for t in tasks], [t.waits for t in tasks]
        else:
            ins = [getattr(t, "inputs", None) for t in tasks]
            outs = [getattr(t, "outputs", None) for t in tasks]
            ocs = [getattr(t, "out_counter", None) for t in tasks]
            waits = [getattr(t, "waits", None) for t in tasks]
        self.inputs, self.readers = _operands(ins, self.buffers)
        self.outputs, self.writers = _operands(outs, self.buffers)
        self.out_counter = [oc if type(oc) is int else None for oc in ocs]
        producers: defaultdict[int, list[int]] = defaultdict(list)
        for pos, oc in enumerate(self.out_counter):
            if oc is not None:
                producers[oc].append(pos)
        self.producers = dict(producers)
        self._index_waits(waits)

    def _index_waits(self, waits: list[Any]) -> None:
        """Each task's wait table and its dependency edges: ``a → b`` for every producer ``a`` of a
        counter ``b`` waits on, regardless of the threshold (spec §2).

        A task produces exactly one counter, so its successors are the tasks that wait on that
        counter: one list per counter serves all of its producers, and a task waiting on one
        counter has that counter's producer list as its predecessors. The common single-wait
        tables are shared per ``(counter, threshold)``. Nothing here is ever mutated after it is built.
        """
        producers, own = self.producers, self.out_counter
        waits_of, counters_of, preds_of = self.waits, self.wait_counters, self.preds
        tables: defaultdict[int, dict[int, tuple[tuple[int, int, int]]]] = defaultdict(dict)
        singles: dict[int, tuple[int]] = {}
        waiters: defaultdict[int, list[int]] = defaultdict(list)
        n_edges = 0
        forward = True
        for pos, ws in enumerate(waits):
            if type(ws) is not list or not ws:
                continue
            preds: Sequence[int]
            if len(ws) == 1 and type(w := ws[0]) is Wait and type(c := w.counter) is int:
                t = w.threshold
                if type(t) is int:
                    shared = tables[c]
                    waits_of[pos] = shared.get(t) or shared.setdefault(t, ((0, c, t),))
                else:
                    waits_of[pos] = ((0, c, t),)
                counters_of[pos] = singles.get(c) or singles.setdefault(c, (c,))
                preds = producers.get(c, ())
                if not preds:
                    continue
                waiters[c].append(pos)
                n_edges += len(preds)
                if own[pos] == c:
                    preds = [p for p in preds if p != pos]
                    self.self_waiting.append(pos)
            else:
                table = _wait_table(ws)
                if not table:
                    continue
                waits_of[pos] = table
                counters_of[pos] = [c for _, c, _ in table]
                distinct = [c for c in dict.fromkeys(counters_of[pos]) if c in producers]
                if not distinct:
                    continue
                for c in distinct:
                    waiters[c].append(pos)
                # distinct counters have disjoint producer lists
                preds = sorted([p for c in distinct for p in producers[c]])
                n_edges += len(preds)
                if own[pos] in distinct:
                    preds.remove(pos)
                    self.self_waiting.append(pos)
            if not preds:
                continue
            if preds[-1] > pos:
                forward = False
            preds_of[pos] = preds
        self._link_successors(waiters)
        self.n_edges = n_edges
        self.forward = forward

    def _link_successors(self, waiters: dict[int, list[int]]) -> None:
        """``succs[p]``: the tasks waiting on ``p``'s counter, without ``p`` itself (spec §2)."""
        succs, producers = self.succs, self.producers
        for c, after in waiters.items():
            for p in producers[c]:
                succs[p] = after
        for pos in self.self_waiting:
            succs[pos] = [w for w in succs[pos] if w != pos]

    @cached_property
    def columns(self) -> TaskColumns | None:
        """The tasks a column at a time (:func:`~amkspec.proofs.columns.task_columns`), built on
        first use and shared by the checks that read it (structure, memory safety)."""
        return task_columns(self.tasks)

    def regions(self, pos: int) -> TaskRegions:
        """The footprint of the task at ``pos`` per operand position (:mod:`amkspec.proofs.footprint`)."""
        found = self._regions[pos]
        if found is None:
            if not self._batched:  # every task at once: its checked operand lists are not checked again
                self._batched = True
                columns = self.columns if self.n >= KEYED_MIN_TASKS else None
                self._regions[:] = all_task_regions(
                    self.tasks, self.inputs, self.outputs, self.buffers, self._memo, columns
                )
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
            known, regions = self._regions, self.regions
            for w in self.writers.get(bid, ()):
                _, _, ids, writes = known[w] or regions(w)  # ``bid`` is among ``ids``
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


def _operands(fields: list[Any], known: dict[int, Any]) -> tuple[list[Any], dict[int, list[int]]]:
    """:func:`_refs` of every task's inputs (or outputs) field, and buffer id → ascending positions
    of the tasks naming it, keys in order of first use.

    When every field is a list of known int ids (a well-formed program) the type and membership
    tests run once over all of them, and a list that names no buffer twice is used as it is (the
    index only reads it): a repeat shows as the task's position already ending its buffer's list.
    """
    if {*map(type, fields)} <= {list}:
        flat = [b for refs in fields for b in refs]
        if {*map(type, flat)} <= {int} and known.keys() >= set(flat):
            users: defaultdict[int, list[int]] = defaultdict(list)
            repeats = []
            for pos, refs in enumerate(fields):
                for b in refs:
                    named = users[b]
                    if named and named[-1] == pos:
                        repeats.append(pos)
                    else:
                        named.append(pos)
            if repeats:
                fields = list(fields)
                for pos in repeats:
                    fields[pos] = list(dict.fromkeys(fields[pos]))
            return fields, dict(users)
    refs_of = [_refs(f, known) for f in fields]
    return refs_of, _users(refs_of)


def _users(refs_of: list[list[int]]) -> dict[int, list[int]]:
    """Buffer id → ascending positions of the tasks naming it, keys in order of first use."""
    users: defaultdict[int, list[int]] = defaultdict(list)
    for pos, refs in enumerate(refs_of):
        for b in refs:
            users[b].append(pos)
    return dict(users)


def _wait_table(waits: Any) -> list[tuple[int, int, Any]]:
    """``(index, counter, threshold)`` of a task's Wait records whose counter is an int."""
    if type(waits) is not list or not waits:
        return []
    return [
        (i, w.counter, w.threshold) for i, w in enumerate(waits) if type(w) is Wait and type(w.counter) is int
    ]


def kahn(n: int, preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> list[int] | None:
    """Kahn's algorithm over positions: FIFO queue seeded in ascending order; None on a cycle."""
    indeg = [len(p) for p in preds]
    order = [i for i in range(n) if not indeg[i]]  # the FIFO queue: order[head:] is still queued
    append = order.append
    head = 0
    while head < len(order):
        for w in succs[order[head]]:
            indeg[w] -= 1
            if not indeg[w]:
                append(w)
        head += 1
    return order if len(order) == n else None


def find_cycle(n: int, succs: Sequence[Sequence[int]]) -> list[int] | None:
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
