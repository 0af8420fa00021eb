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
from collections.abc import Hashable, Iterable, Sequence
from functools import cached_property
from itertools import compress
from operator import not_
from typing import Any, TypeGuard

from amkspec.footprint import (
    EMPTY,
    KEYED_MIN_TASKS,
    Memo,
    Region,
    TaskRegions,
    all_task_regions,
    region_of,
    task_regions,
)
from amkspec.ir import Buffer, Counter, MegakernelProgram, Task, Wait
from amkspec.ir.columns import TaskColumns, every_exactly, task_columns
from amkspec.proofs.reach import Reachability
from amkspec.proofs.rule_keys import RULE_KEYS_AT_ONCE, operand_kinds, rule_keys


def is_int(value: Any) -> TypeGuard[int]:
    """True for a plain int (bools and floats are not ids, counts or thresholds)."""
    return type(value) is int


def as_list(value: Any) -> list[Any]:
    """A list/tuple field as a list; anything else (a broken record) as empty."""
    return list(value) if isinstance(value, (list, tuple)) else []


def _first_by_id(records: list[Any]) -> tuple[dict[int, Any], bool]:
    """``{id: record}`` over the records whose id is an int, the first occurrence of an id winning,
    and whether every record's id is the int equal to its position (0, 1, 2, ...).

    When every record has an id, every id is an int and no two are equal (a well-formed program),
    the map is built in one step: no later record can then lose to an earlier one.
    """
    try:
        ids = [rec.id for rec in records]
    except AttributeError:  # a record without an id: the loop below skips it
        pass
    else:
        if every_exactly(ids, int):
            out = dict(zip(ids, records, strict=True))
            if len(out) == len(records):
                return out, ids == [*range(len(ids))]
    out = {}
    for rec in records:
        rid = getattr(rec, "id", None)
        if is_int(rid) and rid not in out:
            out[rid] = rec
    return out, False  # some record lacks an id, has one that is not an int, or shares one


class ProgramIndex:
    """Id maps, producers, readers, writers, edges and topological order of one program.

    ``waits[i]`` lists ``(index, counter, threshold)`` of the task's Wait records whose
    counter is an int. ``preds[i]``/``succs[i]`` are list positions, sorted, without self-edges;
    ``self_waiting`` holds the positions of tasks that wait on their own counter;
    ``forward`` is True when every edge goes from a lower to a higher list position (the
    task list itself is then a topological order, as in every lowered program).
    ``topo`` is a topological order of positions, or None when the graph has a cycle: the
    list order itself when ``forward``, else Kahn's (FIFO, ascending seeds).
    ``max_threshold`` maps every counter some wait table names to the highest threshold waited
    for on it (a threshold that is not an int counts as 0). ``rejected_tasks`` collects the
    positions of tasks a structure check rejected, so that later families skip them;
    ``buffers_well_formed`` is set by the structure checks when they find every buffer record
    well formed, ``tasks_well_formed`` when they find nothing on any task (both False until then).

    Facts established while indexing, for the checks that would otherwise re-prove them:
    ``fields`` holds every task's ``inputs``, ``outputs`` and ``waits`` field as it is (None where
    a record lacks one); ``plain_inputs`` (``plain_outputs``) is True exactly when every task's
    inputs (outputs) field is a list of int ids of known buffers; ``plain_waits`` is True exactly
    when every task's waits field is a list whose every entry is exactly a
    :class:`~amkspec.ir.Wait` with an int counter and an int threshold; ``min_threshold`` maps each
    counter to the lowest int threshold waited for on it, and ``lowest_threshold`` is the lowest of
    all (None when there is none); ``buffer_kinds`` is the ``kind`` of every buffer record, in the
    order of ``buffers``; ``buffers_in_place`` (``counters_in_place``) is True exactly when every
    buffer (counter) record's id is the int equal to its list position; ``plain_out_counters`` is
    True exactly when every task's out_counter is an int; ``longest_waits`` is the length of the
    longest waits field.
    """

    def __init__(self, prog: MegakernelProgram) -> None:
        self.prog = prog
        self.tasks: list[Task] = list(prog.tasks) if isinstance(prog.tasks, list) else []
        self.buffers: dict[int, Buffer]
        self.counters: dict[int, Counter]
        self.buffers, self.buffers_in_place = _first_by_id(as_list(prog.buffers))
        self.counters, self.counters_in_place = _first_by_id(as_list(prog.counters))
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
        self.buffers_well_formed = self.tasks_well_formed = False
        self.preds: list[Sequence[int]] = [()] * n
        self.succs: list[Sequence[int]] = [()] * n
        self.self_waiting: list[int] = []
        self.n_edges = 0
        self.forward = True
        self.max_threshold: dict[int, int] = {}
        self.min_threshold: dict[int, int] = {}
        self.fields: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        self.plain_inputs = self.plain_outputs = False
        self._wait_lists = True  # every waits field is a list
        self._general: list[int] = []  # positions of the tasks whose waits took the general path
        self._single_waits = False  # some task's waits field is a list of one Wait (int counter, threshold)
        self.plain_waits = False
        self.plain_out_counters = False
        self._index_tasks()
        self.topo: list[int] | None = list(range(n)) if self.forward else kahn(n, self.preds, self.succs)
        self._reach: Reachability | None = None
        self._memo = Memo()
        self._regions: list[TaskRegions | None] = [None] * n
        self._batched = False
        self._writes: dict[int, list[Region]] = {}
        self._write_lists: dict[tuple[int, ...], list[Region]] = {}  # by the regions' ids

    def _index_tasks(self) -> None:
        """Operands, readers/writers and producers of every task (spec §2), a column at a time."""
        tasks = self.tasks
        ins: list[Any]
        outs: list[Any]
        ocs: list[Any]
        waits: list[Any]
        try:
            ins, outs = [t.inputs for t in tasks], [t.outputs for t in tasks]
            ocs, waits = [t.out_counter for t in tasks], [t.waits for t in tasks]
        except AttributeError:  # not every task is a record with these fields: None where it lacks one
            ins = [getattr(t, "inputs", None) for t in tasks]
            outs = [getattr(t, "outputs", None) for t in tasks]
            ocs = [getattr(t, "out_counter", None) for t in tasks]
            waits = [getattr(t, "waits", None) for t in tasks]
        self.fields = (ins, outs, waits)
        self.inputs, self.readers, self.plain_inputs = _operands(ins, self.buffers)
        self.outputs, self.writers, self.plain_outputs = _operands(outs, self.buffers)
        self.plain_out_counters = every_exactly(ocs, int)
        if not self.plain_out_counters:
            ocs = [oc if type(oc) is int else None for oc in ocs]
        self.out_counter = ocs
        self.producers = _positions(ocs)
        self._index_waits(waits)

    def _index_waits(self, waits: list[Any]) -> None:
        """Each task's wait table and its dependency edges: ``a → b`` for every producer ``a`` of a
        counter ``b`` waits on, regardless of the threshold (spec §2).

        A task produces exactly one counter, so its successors are the tasks that wait on that
        counter: one list per counter serves all of its producers. Most tasks wait on one counter
        with an int threshold: they are grouped by that counter in one pass, and the rest of their
        tables (wait counters, predecessors, edge count, self-waits, direction) is filled in once
        per counter (:meth:`_link_single_waits`). The others take :meth:`_index_general_waits`.
        The single-wait tables are shared per ``(counter, threshold)``; nothing here is ever
        mutated after it is built.
        """
        waits_of, counters_of, preds_of = self.waits, self.wait_counters, self.preds
        producers_of = self.producers.get
        tables: dict[int, tuple[tuple[int, int, int]]] = {}  # counter → its first single-wait table
        others: dict[tuple[int, int], tuple[tuple[int, int, int]]] = {}  # further thresholds
        highest: dict[int, int] = {}
        lowest: dict[int, int] = {}
        waiters: dict[int, list[int]] = {}  # counter → positions of the single-wait tasks on it
        general: list[int] = []
        waiters_of = waiters.get  # (its keys are those of ``tables``)
        # the wait of the last single-wait task and its tables: the tiles of one operation repeat it
        run_c = run_t = None
        run_table: tuple[tuple[int, int, int]] = ((0, 0, 0),)
        run_counters: tuple[int] = (0,)
        run_preds: Sequence[int] = ()
        run: list[int] = []
        lists = True
        for pos, ws in enumerate(waits):
            if type(ws) is not list or not ws:
                lists = lists and type(ws) is list
                continue
            if (
                len(ws) == 1
                and type(w := ws[0]) is Wait
                and type(c := w.counter) is int
                and type(t := w.threshold) is int
            ):
                if c != run_c or t != run_t:
                    run_c, run_t, run_counters, run_preds = c, t, (c,), producers_of(c, ())
                    known = waiters_of(c)
                    if known is None:  # the first single-wait task on ``c``
                        run = waiters[c] = []
                        run_table = tables[c] = ((0, c, t),)
                        highest[c] = lowest[c] = t
                    else:
                        run = known
                        run_table = tables[c]
                        if run_table[0][2] != t:
                            run_table = _shared_table(c, t, others, highest, lowest)
                waits_of[pos] = run_table
                counters_of[pos] = run_counters
                preds_of[pos] = run_preds
                run.append(pos)
            else:
                general.append(pos)
        self.max_threshold, self.min_threshold = highest, lowest
        self._wait_lists, self._general, self._single_waits = lists, general, bool(tables)
        joined = self._index_general_waits(general, waits)
        self._link_single_waits(waiters, joined)
        for c, after in joined.items():
            for p in self.producers[c]:
                self.succs[p] = after
        if self.self_waiting:
            self.self_waiting.sort()
            succs = self.succs
            for pos in self.self_waiting:
                succs[pos] = [w for w in succs[pos] if w != pos]

    def _index_general_waits(self, general: list[int], waits: list[Any]) -> dict[int, list[int]]:
        """The wait tables, predecessors and edges of the tasks at ``general`` (ascending), which do
        not wait on exactly one counter with an int threshold (several waits, or a record that is
        not plain); returns counter → the positions among them that wait on it."""
        joined: defaultdict[int, list[int]] = defaultdict(list)
        producers_of, own = self.producers.get, self.out_counter
        highest, lowest = self.max_threshold, self.min_threshold
        waits_of, counters_of, preds_of = self.waits, self.wait_counters, self.preds
        highest_of, lowest_of = highest.get, lowest.get
        n_edges, forward = 0, True
        plain = True  # every entry is a Wait with an int counter and an int threshold
        for pos in general:
            table: list[tuple[int, int, Any]] = []  # (index, counter, threshold) of its Wait records
            counters: list[int] = []  # whose counter is an int
            preds: list[int] = []  # the producers of its distinct counters (they are disjoint)
            waits_own = False
            for i, w in enumerate(waits[pos]):
                if type(w) is not Wait or type(c := w.counter) is not int:
                    plain = False
                    continue
                table.append((i, c, t := w.threshold))
                if type(t) is not int:
                    t, plain = 0, False
                elif (low := lowest_of(c)) is None or t < low:
                    lowest[c] = t
                if (h := highest_of(c)) is None or t > h:
                    highest[c] = t
                if c in counters:
                    counters.append(c)
                    continue
                counters.append(c)
                if (makers := producers_of(c)) is not None:
                    joined[c].append(pos)
                    preds += makers
                    waits_own = waits_own or c == own[pos]
            if not table:
                continue
            waits_of[pos], counters_of[pos] = table, counters
            if not preds:
                continue
            preds.sort()
            n_edges += len(preds)
            if waits_own:
                preds.remove(pos)
                self.self_waiting.append(pos)
            if preds:
                if preds[-1] > pos:
                    forward = False
                preds_of[pos] = preds
        self.n_edges += n_edges
        self.forward = self.forward and forward
        self.plain_waits = self._wait_lists and plain
        return joined

    def _link_single_waits(self, waiters: dict[int, list[int]], joined: dict[int, list[int]]) -> None:
        """Edge count, direction, self-waits and successors of the tasks in ``waiters`` (counter →
        ascending positions of the tasks that wait on that counter alone), a counter at a time.

        A task waiting on counter ``c`` has ``c``'s producers as predecessors (without itself if
        it produces ``c``), so every edge into such tasks runs forward exactly when ``c``'s last
        producer comes before its first waiter. The producers' successors also take the tasks of
        ``joined`` waiting on ``c`` among other counters (they are merged in position order, and
        ``joined`` keeps the counters no single-wait task waits on).
        """
        producers_of, preds_of, succs = self.producers.get, self.preds, self.succs
        n_edges, forward = 0, True
        for c, after in waiters.items():
            preds = producers_of(c)
            if preds is None:
                continue
            n_edges += len(preds) * len(after)
            if preds[-1] >= after[0]:
                forward = forward and preds[-1] == after[0]
                if preds[0] <= after[-1]:
                    for pos in sorted(set(after).intersection(preds)):
                        self.self_waiting.append(pos)
                        preds_of[pos] = [p for p in preds if p != pos] or ()
            if joined and (more := joined.pop(c, None)) is not None:
                after = sorted(after + more)
            for p in preds:
                succs[p] = after
        self.n_edges += n_edges
        self.forward = self.forward and forward

    @property
    def longest_waits(self) -> int | None:
        """The most entries any task's waits field has (0 when none has any), None unless every
        waits field is a list: the single-wait tasks have one, the others were kept while indexing."""
        if not self._wait_lists:
            return None
        waits = self.fields[2]
        longest = max(map(len, map(waits.__getitem__, self._general)), default=0)
        return max(longest, 1) if self._single_waits else longest

    @property
    def lowest_threshold(self) -> int | None:
        """The lowest int threshold of any entry of ``waits`` (None when there is none)."""
        return min(self.min_threshold.values(), default=None)

    @cached_property
    def buffer_kinds(self) -> list[Any]:
        """The ``kind`` of every record of ``buffers``, in the map's order (None where a record
        lacks one), read once for the checks that select buffers by kind."""
        records = self.buffers.values()
        try:
            return [buf.kind for buf in records]
        except AttributeError:
            return [getattr(buf, "kind", None) for buf in records]

    @cached_property
    def columns(self) -> TaskColumns | None:
        """The tasks a column at a time (:func:`~amkspec.ir.columns.task_columns`), built on
        first use and shared by the checks that read it (structure, memory safety)."""
        return task_columns(self.tasks, *self.fields)

    @cached_property
    def rule_keys(self) -> list[Hashable | None] | None:
        """The tasks' rule keys (:func:`~amkspec.proofs.rule_keys.rule_keys`), built on first use
        and shared by the footprint batch and memory safety; None unless the tasks have columns,
        every buffer is well formed (:attr:`buffers_well_formed`) and they are one block
        (:data:`~amkspec.proofs.rule_keys.RULE_KEYS_AT_ONCE`)."""
        columns = self.columns
        if columns is None or not self.buffers_well_formed or self.n > RULE_KEYS_AT_ONCE:
            return None
        return rule_keys(columns, 0, self.n, self.kinds)

    @cached_property
    def kinds(self) -> dict[int, int]:
        """The buffers' :func:`~amkspec.proofs.rule_keys.operand_kinds`, built on first use (by
        :attr:`rule_keys`, once the structure checks have found every buffer well formed)."""
        return operand_kinds(self.buffers, self.buffers_well_formed)

    def regions(self, pos: int) -> TaskRegions:
        """The footprint of the task at ``pos`` per operand position (:mod:`amkspec.footprint`)."""
        found = self._regions[pos]
        if found is None:
            if not self._batched:  # every task at once: its checked operand lists are not checked again
                self._batched = True
                columns = self.columns if self.n >= KEYED_MIN_TASKS else None
                well_formed = self.buffers_well_formed  # set by the structure checks, which run first
                keys = self.rule_keys if columns is not None else None
                self._regions[:] = all_task_regions(
                    self.tasks, self.inputs, self.outputs, self.buffers, self._memo, columns, well_formed,
                    keys, self.kinds if keys is not None else None,
                )
                found = self._regions[pos]
            if found is None:
                found = self._regions[pos] = task_regions(self.tasks[pos], self.buffers, self._memo)
        return found

    def read_region(self, pos: int, bid: int) -> Region:
        """Elements of buffer ``bid`` the task at ``pos`` reads (spec §3.3)."""
        ids, reads, _, _ = self.regions(pos)
        if ids.count(bid) == 1:  # named once: its region as it is (region_of without a list)
            return reads[ids.index(bid)]
        return region_of(ids, reads, bid) if bid in ids else EMPTY

    def write_region(self, pos: int, bid: int) -> Region:
        """Elements of buffer ``bid`` the task at ``pos`` writes (spec §3.3)."""
        _, _, ids, writes = self.regions(pos)
        if ids.count(bid) == 1:  # named once: its region as it is (region_of without a list)
            return writes[ids.index(bid)]
        return region_of(ids, writes, bid) if bid in ids else EMPTY

    def write_regions(self, bid: int) -> list[Region]:
        """``write_region(w, bid)`` for every ``w`` in ``writers[bid]``, in that order (computed once).

        Buffers whose lists hold the same Region objects (the tiles of every layer) get one shared
        list, never mutated and kept alive by the index: its ``id`` stands for its contents.
        """
        found = self._writes.get(bid)
        if found is None:
            found = []
            known, regions = self._regions, self.regions
            for w in self.writers.get(bid, ()):
                _, _, ids, writes = known[w] or regions(w)  # ``bid`` is among ``ids``
                found.append(writes[0] if len(ids) == 1 else region_of(ids, writes, bid))
            found = self._writes[bid] = self._write_lists.setdefault(tuple(map(id, found)), found)
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
            self._reach = Reachability(self.preds, self.topo, in_list_order=self.forward)
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


def _operands(fields: list[Any], known: dict[int, Any]) -> tuple[list[Any], dict[int, list[int]], bool]:
    """:func:`_refs` of every task's inputs (or outputs) field, buffer id → ascending positions
    of the tasks naming it, keys in order of first use, and whether every field is a list of
    int ids of known buffers.

    When every field is a list of known int ids (a well-formed program) one pass groups them
    (:func:`_users_of_ids`), and a list that names no buffer twice is used as it is (the index
    only reads it).
    """
    grouped = _users_of_ids(fields)
    if grouped is not None and known.keys() >= grouped[0].keys():
        users, repeats = grouped
        if repeats:
            fields = list(fields)
            for pos in repeats:
                fields[pos] = list(dict.fromkeys(fields[pos]))
        return fields, users, True
    refs_of = [_refs(f, known) for f in fields]
    return refs_of, _users(refs_of), False


def _users_of_ids(fields: list[Any]) -> tuple[dict[int, list[int]], list[int]] | None:
    """When every field is a list of ints: id → ascending positions of the fields naming it (keys
    in order of first use), and the positions of the fields that name an id twice; else None.

    A repeat shows as the field's position already ending its id's list. Fields of one or two ids
    (most operand lists) are unpacked rather than iterated, and a field naming the ids of the
    field of its size before (the tiles of one operation) joins their lists without a lookup.
    """
    users: dict[int, list[int]] = {}
    join = users.setdefault  # id → its list, a new one for an id first seen (then appended to)
    repeats: list[int] = []
    last: int | None = None  # the id of the last one-id field, and its list
    last_users: list[int] = []
    last_a = last_b = None  # the ids of the last two-id field naming two ids, and their lists
    users_a: list[int] = []
    users_b: list[int] = []
    for pos, refs in enumerate(fields):
        if type(refs) is not list:
            return None
        size = len(refs)
        if size == 1:
            (a,) = refs
            if type(a) is not int:
                return None
            if a == last:  # the tiles of one operation write one buffer
                last_users.append(pos)
                continue
            last = a
            last_users = join(a, [])
            last_users.append(pos)
        elif size == 2:
            a, b = refs
            if type(a) is not int or type(b) is not int:
                return None
            if a == last_a and b == last_b:
                users_a.append(pos)
                users_b.append(pos)
                continue
            users_a = join(a, [])
            users_a.append(pos)
            if b == a:
                repeats.append(pos)
                last_a = None
                continue
            users_b = join(b, [])
            users_b.append(pos)
            last_a, last_b = a, b
        else:
            for b in refs:
                if type(b) is not int:
                    return None
                named = join(b, [])
                if named and named[-1] == pos:
                    repeats.append(pos)
                else:
                    named.append(pos)
    return users, repeats


def _shared_table(
    c: int,
    t: int,
    others: dict[tuple[int, int], tuple[tuple[int, int, int]]],
    highest: dict[int, int],
    lowest: dict[int, int],
) -> tuple[tuple[int, int, int]]:
    """The single-wait table ``((0, c, t),)`` for a threshold other than the first one seen for
    ``c`` (shared in ``others``), raising ``highest[c]`` or lowering ``lowest[c]`` to ``t`` if needed."""
    if t > highest[c]:
        highest[c] = t
    elif t < lowest[c]:
        lowest[c] = t
    return others.get((c, t)) or others.setdefault((c, t), ((0, c, t),))


def _positions(keys: list[int | None]) -> dict[int, list[int]]:
    """Key → ascending positions where it occurs, keys in order of first use (None is no key).
    A key equal to the one before (the tiles of one operation) skips the lookup."""
    found: dict[Any, list[int]] = {}
    join = found.setdefault
    last: int | None = None
    named: list[int] = []
    for pos, key in enumerate(keys):
        if key != last:
            last = key
            named = join(key, [])
        named.append(pos)
    found.pop(None, None)
    return found


def _users(refs_of: list[list[int]]) -> dict[int, list[int]]:
    """Buffer id → ascending positions of the tasks naming it, keys in order of first use."""
    users: defaultdict[int, list[int]] = defaultdict(list)
    for pos, refs in enumerate(refs_of):
        for b in refs:
            users[b].append(pos)
    return dict(users)


def kahn(n: int, preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> list[int] | None:
    """Kahn's algorithm over positions: FIFO queue seeded in ascending order; None on a cycle."""
    indeg = list(map(len, preds))
    order = list(compress(range(n), map(not_, indeg)))  # the FIFO queue: order[head:] is still queued
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
