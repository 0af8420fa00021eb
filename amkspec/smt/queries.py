"""The proof obligations of spec §3 as Z3 queries over execution prefixes.

Each query asks for a bad execution. UNSAT is a proof that none exists for
this program; SAT yields a :class:`~amkspec.smt.witness.Witness`:

* **read race** (spec §3.3): a reader of a transient buffer (ACTIVATION,
  IO_OUTPUT, or a KV_CACHE written this pass) starts while some other writer
  of it has not ended: ``s_r < e_w``;
* **write race**: two writers with overlapping footprints run at the same
  time. (Two writers that can run in either order can also overlap: ended
  sets of reachable states are closed under union, so from the union of the
  states where each could start, both can start. Unless they share an SM
  queue, which fixes their order. One query therefore covers both cases.)
* **page clobber** (spec §1.6, §3.3): a write of one occupant of a page lands inside
  the live range of another: it lands after that occupant was written and starts
  before a reader of it starts (so the read sees the page overwritten);
* **deadlock** (spec §3.2): a reachable state where nothing runs, not every
  task finished, and every unstarted task is blocked by an unmet wait or an
  unfinished SM-queue predecessor;
* **cycle**: a cycle of producer→consumer and SM-queue edges;
* **unwritten read**: a task that reads elements of a transient buffer that no other task
  writes (no writer at all, a coverage gap, its own output) can start.

Near-linear at any program size (issue 12): by default (``reduce=True``) each obligation is first
decided by *happens-before* over all-join edges (:class:`~amkspec.proofs.reach.Reachability`): a
writer that must end before its reader starts cannot race with it, and so on. Only the pairs that
can reorder reach Z3, each on its own :func:`~amkspec.smt.encoding.neighbourhood` (the tasks it
names plus those a partial wait counts; every other ancestor is summarised by the kept tasks it
waits for). The deadlock query is decided by the maximal run: counters only grow, so the ended
sets of reachable states are closed under union, the maximal one is reached by running any
ready task until none is, and a stuck state exists, with task ``i`` unfinished, exactly when the
maximal run leaves ``i`` (in every stuck state the ended set *is* the maximal run: the first task
of that run missing from it would be ready). The cycle query keeps the tasks that peeling
successor-less tasks leaves: the largest set in which every task has a successor. ``reduce=False``
is the full encoding (one solver, whole ancestor closures): every obligation then goes to Z3,
except coverage: an unwritten-read query whose reads the other writers' footprints cover has no
bad execution to search and is decided by the footprints (``footprint``).

By default (``reduce=None``) a program of at most :data:`FULL_ENCODING_MAX_TASKS` tasks gets the
full encoding, so each of its obligations is discharged by Z3 independently of the validator's
algorithm (the second discharge of spec §3); a larger one gets the reduced path. Every
:class:`QueryResult` says what decided it (:attr:`QueryResult.by`), and reports say so: an
obligation decided by happens-before is *not* called a Z3 proof.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import attrs
import z3

from amkspec.ir import BufferKind, MegakernelProgram
from amkspec.ir.graph import kahn_order, kahn_walk
from amkspec.ir.trace import Event, Trace
from amkspec.proofs.reach import Reachability
from amkspec.smt.encoding import Encoding, required_preds
from amkspec.smt.view import PageShare, ProgramView, ReadObligation, WriterPair, build_view
from amkspec.smt.witness import Blocked, BlockedWait, CycleEdge, Witness

ClobberTriple = tuple[int, int, int, int, int]
"""A way a page can be clobbered: buffers ``x``, ``y`` of one page, ``x``'s writer ``u1`` and
reader ``u2``, and ``y``'s writer ``v`` (task indices)."""

FULL_ENCODING_MAX_TASKS = 1000
"""Programs up to this many tasks get the full Z3 encoding by default (a few seconds at this size,
measured by ``benchmarks/smt.py``; beyond it the full encoding grows quadratically in memory)."""

Z3, HAPPENS_BEFORE, MAXIMAL_RUN = "Z3", "happens-before", "maximal run"
PEELING, NO_GAP = "peeling", "footprint"
"""What decided a query (:attr:`QueryResult.by`): a Z3 check; the all-join order (no Z3 call);
the maximal run (deadlock: reduced path, or no task at all); peeling successor-less tasks (cycle,
reduced path); the footprints alone (an unwritten read whose elements every other writer covers, or that reads
no element)."""


@attrs.frozen
class QueryResult:
    """One discharged obligation: ``witness`` None means UNSAT (proved for this program)."""

    query: str
    kind: str
    tasks: tuple[int, ...]
    witness: Witness | None
    seconds: float
    by: str = Z3
    """What decided it: :data:`Z3` (a solver check) or an algorithm (see the module constants)."""

    @property
    def proved(self) -> bool:
        return self.witness is None


class Prover:
    """All queries of one program on one incremental :class:`Encoding`."""

    def __init__(self, prog: MegakernelProgram, reduce: bool | None = None) -> None:
        self.prog = prog
        self.view: ProgramView = build_view(prog)
        self.reduce = len(self.view.tasks) > FULL_ENCODING_MAX_TASKS if reduce is None else reduce
        self._by = Z3
        """What decided the query under way (set by the ``_..._witness`` methods)."""
        self.full = Encoding(self.view)
        """The full encoding (``reduce=False``); its context is shared by the neighbourhoods."""
        self._hb: Reachability | None = None
        self._hb_built = False
        self._known: dict[tuple[int, int], bool] = {}
        self.buffer_names = {b.id: b.name for b in prog.buffers}
        self.reads_of: dict[int, list[ReadObligation]] = {}
        for o in self.view.reads:
            self.reads_of.setdefault(o.reader, []).append(o)

    # -- helpers ---------------------------------------------------------------------------------
    def encoding(self, involved: Iterable[int]) -> Encoding:
        """The encoding a query about ``involved`` runs on: its neighbourhood, or the full one."""
        involved = list(involved)
        if not self.reduce:
            self.full.ensure(involved)
            return self.full
        return Encoding.reduced(self.view, involved, self.full.ctx)

    def _reach(self) -> Reachability | None:
        """Happens-before over all-join edges (None when they form a cycle: nothing is decided)."""
        if not self._hb_built:
            n = len(self.view.tasks)
            self._hb = _topological([sorted(set(required_preds(self.view, i))) for i in range(n)])
            self._hb_built = True
        return self._hb

    def known_order(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Answer a batch of "must ``a`` end before ``b`` starts?" questions at once (cached)."""
        reach = self._reach() if self.reduce else None
        todo = {p for p in pairs if p not in self._known}
        yes = reach.ancestors(todo) if reach is not None else set()
        self._known.update((p, p in yes) for p in todo)

    def before(self, a: int, b: int) -> bool:
        """``a`` ends before ``b`` starts in every execution (``reduce`` only; else always False)."""
        if (a, b) not in self._known:
            self.known_order([(a, b)])
        return self._known[(a, b)]

    def _name(self, i: int) -> str:
        t = self.view.tasks[i]
        return f"{t.id}:{t.label}" if t.label else str(t.id)

    def _buf(self, b: int) -> str:
        return f"{b}:{self.buffer_names.get(b, '?')}"

    def _timed(
        self, query: str, kind: str, tasks: list[int], run: Callable[[], Witness | None]
    ) -> QueryResult:
        t0 = time.perf_counter()
        self._by = Z3
        witness = run()
        return QueryResult(
            query, kind, tuple(self.view.ids(tasks)), witness, time.perf_counter() - t0, self._by
        )

    def _decided(self, by: str) -> None:
        """Record that the query under way was decided without Z3, by ``by``."""
        self._by = by

    # -- read races ------------------------------------------------------------------------------
    def read_race(
        self, reader: int, buffer: int | None = None, writers: Iterable[int] | None = None
    ) -> QueryResult:
        """Can ``reader`` start before some other writer of one of its transient inputs ends?

        ``buffer`` and ``writers`` (task indices) narrow the question to one obligation.
        """
        allowed = None if writers is None else set(writers)
        pairs = [
            (o, w)
            for o in self.reads_of.get(reader, [])
            if buffer in (None, o.buffer)
            for w in o.writers
            if allowed is None or w in allowed
        ]
        kind = "kv-race" if any(o.kv for o, _ in pairs) else "read-race"
        return self._timed(
            f"read-race(task {self._name(reader)})", kind, [reader], lambda: self._read_witness(reader, pairs)
        )

    def _read_witness(self, r: int, pairs: list[tuple[ReadObligation, int]]) -> Witness | None:
        pairs = [(o, w) for o, w in pairs if not self.before(w, r)]
        if not pairs:
            self._decided(HAPPENS_BEFORE)
            return None
        enc = self.encoding([r, *(w for _, w in pairs)])
        model = enc.check(z3.And(enc.started(r), z3.Or([enc.start(r) < enc.end(w) for _, w in pairs])))
        if model is None:
            return None
        o, w = next((o, w) for o, w in pairs if enc.happened(model, enc.start(r) < enc.end(w)))
        # Prefer the most telling interleaving: the read begins while the write is under way.
        model = (
            enc.check(z3.And(enc.started(r), enc.start(w) < enc.start(r), enc.start(r) < enc.end(w))) or model
        )
        ids = self.view.ids([r, w])
        return Witness(
            "kv-race" if o.kv else "read-race",
            f"task {self._name(r)} reads {self._buf(o.buffer)} before writer {self._name(w)} has ended",
            tuple(ids),
            (o.buffer,),
            (),
            {"reader": ids[0], "writer": ids[1], "buffer": o.buffer},
            enc.trace(model, self.view.closure([r, w])),
        )

    def unwritten_read(self, reader: int, buffer: int) -> QueryResult:
        """Can ``reader`` start at all? It then reads ``buffer``, which no task writes."""

        def run() -> Witness | None:
            gap = any(o.buffer == buffer and o.unwritten for o in self.reads_of.get(reader, []))
            # ``gap``: some element it reads is written by no other task (with no writer at all, any
            # element it reads; none when it reads no element, or not this buffer)
            if not gap:
                self._decided(NO_GAP)
                return None
            enc = self.encoding([reader])
            model = enc.check(enc.started(reader))
            if model is None:
                return None
            tid = self.view.tasks[reader].id
            return Witness(
                "unwritten-read",
                f"task {self._name(reader)} reads elements of {self._buf(buffer)} that no other task writes",
                (tid,),
                (buffer,),
                (),
                {"reader": tid, "buffer": buffer},
                enc.trace(model, self.view.closure([reader])),
            )

        return self._timed(f"unwritten-read(task {self._name(reader)})", "unwritten-read", [reader], run)

    # -- write races -----------------------------------------------------------------------------
    def write_race(self, pair: WriterPair) -> QueryResult:
        """Can two writers with overlapping footprints run at the same time?"""
        return self._timed(
            f"write-race(tasks {self._name(pair.a)}, {self._name(pair.b)})",
            "write-race",
            [pair.a, pair.b],
            lambda: self._write_witness(pair),
        )

    def _write_witness(self, pair: WriterPair) -> Witness | None:
        a, b = pair.a, pair.b
        if self.before(a, b) or self.before(b, a):
            self._decided(HAPPENS_BEFORE)
            return None
        enc = self.encoding([a, b])
        model = enc.check(
            z3.And(enc.started(a), enc.started(b), enc.start(a) < enc.end(b), enc.start(b) < enc.end(a))
        )
        if model is None:
            return None
        ids = tuple(self.view.ids([a, b]))
        return Witness(
            "write-race",
            f"writers {self._name(a)} and {self._name(b)} of {self._buf(pair.buffer)} run at the same time",
            ids,
            (pair.buffer,),
            (),
            {"first": ids[0], "second": ids[1], "buffer": pair.buffer},
            enc.trace(model, self.view.closure([a, b])),
        )

    # -- page clobbers ---------------------------------------------------------------------------
    def page_clobber(self, share: PageShare, triple: ClobberTriple | None = None) -> QueryResult:
        """Can a write of one occupant land inside the live range of the other? ``triple``
        narrows the question to one (writer, reader, clobberer) of :meth:`clobber_triples`."""
        users = self.view.buffer_users
        involved = sorted({i for b in (share.a, share.b) for side in users.get(b, ([], [])) for i in side})
        return self._timed(
            f"page-clobber(page {share.page}: buffers {share.a}, {share.b})",
            "page-clobber",
            involved,
            lambda: self._clobber_witness(share, [triple] if triple else self.clobber_triples(share)),
        )

    def clobber_triples(self, share: PageShare) -> list[ClobberTriple]:
        """The (x, y, writer u1 of x, reader u2 of x, writer v of y) triples of ``share`` that no
        happens-before order makes harmless: each is a way the page could be clobbered."""
        return [
            t
            for t in self._clobber_triples(share)
            if not any(self.before(*o) for o in self._clobber_orders(*t[2:]))
        ]

    def _clobber_triples(self, share: PageShare) -> Iterator[ClobberTriple]:
        users = self.view.buffer_users
        for x, y in ((share.a, share.b), (share.b, share.a)):
            readers, writers = users.get(x, ([], []))
            for u1 in writers:
                for u2 in readers:
                    for v in users.get(y, ([], []))[1]:
                        if v not in (u1, u2):
                            yield x, y, u1, u2, v

    @staticmethod
    def _clobber_orders(u1: int, u2: int, v: int) -> list[tuple[int, int]]:
        """Orders any one of which makes the triple harmless: v's write ends before u1's starts,
        u2's read ends before v's write starts, or u2 ends before u1 starts (u1 then ends after it)."""
        return [(v, u1), (u2, v), (u2, u1)]

    def _clobber_witness(self, share: PageShare, triples: list[ClobberTriple]) -> Witness | None:
        if not triples:
            self._decided(HAPPENS_BEFORE)
            return None
        enc = self.encoding(sorted({i for t in triples for i in t[2:]}))

        def bad(u1: int, u2: int, v: int) -> z3.BoolRef:
            # v's write of the other occupant is under way, or landed after u1's, when u2 reads.
            return z3.And(
                enc.ended(u1),
                enc.started(v),
                enc.started(u2),
                enc.end(u1) < enc.start(u2),
                enc.start(v) < enc.start(u2),
                z3.Or(enc.start(u2) < enc.end(v), enc.end(u1) < enc.end(v)),
            )

        model = enc.check(z3.Or([bad(u1, u2, v) for _, _, u1, u2, v in triples]))
        if model is None:
            return None
        x, y, u1, u2, v = next(t for t in triples if enc.happened(model, bad(*t[2:])))
        ids = self.view.ids([u1, u2, v])
        return Witness(
            "page-clobber",
            f"{self._name(v)} writes {self._buf(y)} on page {share.page} while {self._buf(x)}, "
            f"written by {self._name(u1)}, is still to be read by {self._name(u2)}",
            tuple(dict.fromkeys(ids)),
            (x, y),
            (),
            {
                "writer": ids[0],
                "reader": ids[1],
                "clobberer": ids[2],
                "page": share.page,
                "buffer": x,
                "other": y,
            },
            enc.trace(model, self.view.closure([u1, u2, v])),
        )

    # -- deadlock --------------------------------------------------------------------------------
    def deadlock(self, task: int | None = None) -> QueryResult:
        """A reachable stuck state (with ``task`` unfinished, when given)."""
        scope = range(len(self.view.tasks)) if task is None else sorted(self.view.closure([task]))
        name = "deadlock" if task is None else f"deadlock(task {self._name(task)})"
        return self._timed(
            name,
            "deadlock",
            [] if task is None else [task],
            lambda: self._deadlock_witness(list(scope), task),
        )

    def _unmet(self, c: int, t: int) -> z3.BoolRef:
        prods = self.view.producers.get(c, [])
        t -= self.view.init.get(c, 0)
        if t <= 0:
            return z3.BoolVal(False, self.full.ctx)
        if len(prods) < t:
            return z3.BoolVal(True, self.full.ctx)
        if len(prods) == t:
            return z3.Or([z3.Not(self.full.ended(p)) for p in prods])
        return z3.Not(z3.PbGe([(self.full.ended(p), 1) for p in prods], t))

    def _deadlock_witness(self, scope: list[int], task: int | None) -> Witness | None:
        if not scope:
            self._decided(MAXIMAL_RUN)  # no task: the maximal run is empty and leaves none, no Z3 call
            return None
        if self.reduce:
            self._decided(MAXIMAL_RUN)
            return self._maximal_run_witness(task)
        enc, view = self.full, self.view
        enc.ensure(scope)
        goal = []
        for i in scope:
            blocked = [self._unmet(c, t) for c, t in view.tasks[i].waits]
            if i in view.queue_prev:
                blocked.append(z3.Not(enc.ended(view.queue_prev[i])))
            goal.append(z3.Implies(enc.started(i), enc.ended(i)))
            goal.append(z3.Or(enc.started(i), z3.Or(blocked) if blocked else z3.BoolVal(False, enc.ctx)))
        goal.append(
            z3.Not(enc.ended(task)) if task is not None else z3.Or([z3.Not(enc.ended(i)) for i in scope])
        )
        model = enc.check(z3.And(goal))
        if model is None:
            return None
        return self._stuck_witness(*self._complete_stuck(enc.trace(model, set(scope))), task)

    def _maximal_run_witness(self, task: int | None) -> Witness | None:
        """The stuck state is the maximal run (module doc): a witness iff it leaves ``task`` (or any
        task) unfinished."""
        events, blocked_list = self._complete_stuck(())
        left = {b.task for b in blocked_list}
        if not left or (task is not None and self.view.tasks[task].id not in left):
            return None
        return self._stuck_witness(events, blocked_list, task)

    def _stuck_witness(self, events: Trace, blocked_list: tuple[Blocked, ...], task: int | None) -> Witness:
        view = self.view
        ids = tuple(b.task for b in blocked_list)
        return Witness(
            "deadlock",
            f"{len(blocked_list)} task(s) can never start",
            ids,
            (),
            tuple(sorted({w.counter for b in blocked_list for w in b.waits})),
            {} if task is None else {"task": view.tasks[task].id},
            events,
            blocked_list,
        )

    def _complete_stuck(self, trace: Trace) -> tuple[Trace, tuple[Blocked, ...]]:
        """Run every other runnable task after ``trace`` and name what blocks the rest."""
        view = self.view
        pos = {t.id: t.index for t in view.tasks}
        done = {pos[e.task] for e in trace if e.kind == "end"}
        value = dict(view.init)
        for c, ps in view.producers.items():
            value[c] = value.get(c, 0) + sum(1 for p in ps if p in done)
        events = list(trace)

        # Event-driven, linear: each task counts its unmet conditions; a counter's waiters are
        # sorted by threshold and released as its value passes them.
        missing = [0] * len(view.tasks)
        waiters: dict[int, list[tuple[int, int]]] = {}
        followers: dict[int, int] = {}
        for t in view.tasks:
            if t.index in done:
                continue
            for c, th in t.waits:
                if value.get(c, 0) < th:
                    missing[t.index] += 1
                    waiters.setdefault(c, []).append((th, t.index))
            prev = view.queue_prev.get(t.index)
            if prev is not None and prev not in done:
                missing[t.index] += 1
                followers[prev] = t.index
        for ws in waiters.values():
            ws.sort(reverse=True)
        ready = deque(i for i in range(len(view.tasks)) if i not in done and missing[i] == 0)
        while ready:
            i = ready.popleft()
            done.add(i)
            events += [Event("start", view.tasks[i].id), Event("end", view.tasks[i].id)]
            c = view.tasks[i].out_counter
            value[c] = value.get(c, 0) + 1
            released = [i_ for i_ in [followers.get(i)] if i_ is not None]
            ws = waiters.get(c, [])
            while ws and ws[-1][0] <= value[c]:
                released.append(ws.pop()[1])
            for j in released:
                missing[j] -= 1
                if missing[j] == 0:
                    ready.append(j)
        waiting = [i for i in range(len(view.tasks)) if i not in done]
        blocked = []
        for i in sorted(waiting):
            t = view.tasks[i]
            unmet = tuple(BlockedWait(c, th, value.get(c, 0)) for c, th in t.waits if value.get(c, 0) < th)
            prev = view.queue_prev.get(i)
            blocked.append(
                Blocked(t.id, unmet, None if prev is None or prev in done else view.tasks[prev].id)
            )
        return tuple(events), tuple(blocked)

    # -- cycles ----------------------------------------------------------------------------------
    def succ_edges(self) -> dict[int, list[tuple[int, str]]]:
        """Producer→consumer and SM-queue edges, by source index."""
        out: dict[int, list[tuple[int, str]]] = {i: [] for i in range(len(self.view.tasks))}
        for t in self.view.tasks:
            for c, _ in t.waits:
                for p in self.view.producers.get(c, ()):
                    out[p].append((t.index, f"counter {c}"))
        for nxt, prev in self.view.queue_prev.items():
            out[prev].append((nxt, f"sm {self.view.tasks[nxt].sm} queue"))
        return out

    def cycle(self, within: Iterable[int] | None = None) -> QueryResult:
        """A non-empty set of tasks (inside ``within``) each with a successor in the set holds a cycle."""
        scope = None if within is None else set(within)
        return self._timed(
            "cycle", "cycle", [] if scope is None else sorted(scope), lambda: self._cycle_witness(scope)
        )

    def _cycle_witness(self, scope: set[int] | None) -> Witness | None:
        succ = {
            i: [(j, via) for j, via in es if scope is None or j in scope]
            for i, es in self.succ_edges().items()
            if scope is None or i in scope
        }
        if self.reduce:
            self._decided(PEELING)
        inside = _peel(succ) if self.reduce else self._cycle_members(succ)
        if not inside:
            return None
        path: list[tuple[int, int, str]] = []
        seen: dict[int, int] = {}
        i = min(inside)
        while i not in seen:
            seen[i] = len(path)
            j, via = next((j, via) for j, via in succ[i] if j in inside)
            path.append((i, j, via))
            i = j
        loop = path[seen[i] :]
        edges = tuple(CycleEdge(self.view.tasks[a].id, self.view.tasks[b].id, via) for a, b, via in loop)
        ids = tuple(e.src for e in edges)
        return Witness(
            "cycle",
            f"a cycle of {len(edges)} edge(s): none of its tasks can start first",
            ids,
            (),
            (),
            {},
            (),
            (),
            edges,
        )

    def _cycle_members(self, succ: dict[int, list[tuple[int, str]]]) -> set[int]:
        """A set of tasks each with a successor inside, found by Z3 (the full encoding)."""
        ctx = self.full.ctx
        member = {i: z3.Bool(f"in{i}", ctx) for i in succ}
        goal = [z3.Or(list(member.values()))] if member else [z3.BoolVal(False, ctx)]
        goal += [
            z3.Implies(member[i], z3.Or([member[j] for j, _ in es])) if es else z3.Not(member[i])
            for i, es in succ.items()
        ]
        model = self.full.check(z3.And(goal))
        if model is None:
            return set()
        return {i for i, b in member.items() if z3.is_true(model.eval(b, model_completion=True))}

    # -- everything ------------------------------------------------------------------------------
    def prove_all(self) -> list[QueryResult]:
        """Every query of the program: all UNSAT is a per-program proof of spec §3.

        One unwritten-read query per read of an ACTIVATION or IO_OUTPUT buffer: where the
        footprints leave no element of it unwritten by the other writers it is decided by them
        (``by`` is ``footprint``), else Z3 asks whether the reader can start.
        """
        self.known_order(self._all_orders())
        results = [self.cycle(), self.deadlock()]
        results += [self.read_race(r) for r in sorted(self.reads_of)]
        results += [self.unwritten_read(r, b) for r, b in self._fresh_reads()]
        results += [self.write_race(p) for p in self.view.writer_pairs]
        results += [self.page_clobber(s) for s in self.view.page_shares]
        return results

    def _fresh_reads(self) -> list[tuple[int, int]]:
        """(reader, buffer) for each read of an ACTIVATION or IO_OUTPUT buffer (spec §3.3)."""
        kind: dict[int, object] = {}
        for b in self.prog.buffers:  # the first record of an id wins, as everywhere else
            if type(b.id) is int and b.id not in kind:
                kind[b.id] = b.kind
        fresh = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT)
        users = self.view.buffer_users
        return sorted((r, b) for b, (readers, _) in users.items() if kind.get(b) in fresh for r in readers)

    def _all_orders(self) -> Iterator[tuple[int, int]]:
        """Every happens-before question :meth:`prove_all` asks, to answer them in one batch."""
        if not self.reduce:
            return
        for o in self.view.reads:
            yield from ((w, o.reader) for w in o.writers)
        for p in self.view.writer_pairs:
            yield from ((p.a, p.b), (p.b, p.a))
        for share in self.view.page_shares:
            for *_, u1, u2, v in self._clobber_triples(share):
                yield from self._clobber_orders(u1, u2, v)


def _topological(preds: list[list[int]]) -> Reachability | None:
    """Happens-before over ``preds`` in Kahn's order (:func:`amkspec.ir.graph.kahn_order`); None
    when they form a cycle."""
    order = kahn_order(range(len(preds)), ((p, i) for i, ps in enumerate(preds) for p in ps))
    return None if order is None else Reachability(preds, order)


def _peel(succ: dict[int, list[tuple[int, str]]]) -> set[int]:
    """The largest set of tasks in which every task has a successor: what remains after removing
    tasks without successors, again and again (Kahn's walk of the reversed edges,
    :func:`amkspec.ir.graph.kahn_walk`). Empty exactly when there is no cycle (spec §2)."""
    return set(succ).difference(kahn_walk(succ, ((j, i) for i, es in succ.items() for j, _ in es)))
