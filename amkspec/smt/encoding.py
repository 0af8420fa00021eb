"""Z3 encoding of counter-state executions (spec §2.2; the verification guide, "The execution model").

Every task ``i`` has integer event times ``s_i < e_i`` (start, end). An event
*happens* when its time is negative: the encoding describes execution
*prefixes*, so a task that never starts (because it is blocked, or simply not
yet) needs no fake schedule. Ties are harmless: every ordering constraint is
strict, and a trace lists equal-time ends before starts.

For a task that starts (``s_i < 0``):

* each wait ``(c, t)`` holds: ``init(c) + #{p ∈ producers(c) : e_p < s_i} ≥ t`` (spec §1.5,
  §2; an all-join wait becomes ``e_p < s_i`` for every producer, a partial one a
  pseudo-boolean sum, a wait whose threshold the init already reaches nothing);
* its SM-queue predecessor has ended: ``e_prev < s_i`` (spec §3.2, per-SM queue).

Two scopes:

* the **full** encoding (:meth:`Encoding.ensure`) adds the constraints of the ancestor closure of
  the tasks a query names, on one incremental solver;
* a **neighbourhood** (:func:`neighbourhood`, :meth:`Encoding.reduced`) keeps only the tasks a
  query names plus those whose timing a counting argument needs (tasks with a partial wait and
  the producers that wait counts). Every other ancestor has only *all-join* edges (every
  producer of each of its waits, and its queue predecessor, must end first), so it can run at any
  moment after its own dependencies have ended, and all that matters of it is which kept tasks must
  end before it: its *frontier*. A kept task that depends on it then gets ``e_k < s_i`` for each ``k``
  of the frontier. This is exact: a bad execution of the full encoding restricted to the kept
  tasks satisfies the neighbourhood's constraints (the frontier ended before the summarised task,
  which ended before ``i``), and a model of the neighbourhood becomes a full execution by running
  each summarised task that a started kept task needs just before the first start that needs it
  (:meth:`Encoding.trace`). A
  summarised task that can never run (a wait above its producer count, a cycle of all-join edges)
  makes everything that depends on it unable to start. The neighbourhood of a query about two
  tasks deep in a 100k-task chain is those two tasks, not the chain.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import z3

from amkspec.ir.trace import Event, Trace
from amkspec.smt.view import ProgramView, SolverUnknown

NEVER = None
"""The frontier of a summarised task that can never run."""


@attrs.frozen
class Neighbourhood:
    """The tasks a query keeps, and the *frontier* of each summarised ancestor: the kept tasks that
    must end before it can start (``None``: it can never start). ``order`` lists the summarised tasks
    so that every task comes after its summarised predecessors."""

    kept: frozenset[int]
    frontier: dict[int, frozenset[int] | None]
    order: tuple[int, ...]
    preds: dict[int, list[int]]
    """Every summarised task's all-join predecessors."""


def wait_need(view: ProgramView, counter: int, threshold: int) -> int:
    """How many producers of ``counter`` must have ended for the wait to hold (the init counts)."""
    return threshold - view.init.get(counter, 0)


def required_preds(view: ProgramView, i: int) -> list[int]:
    """The tasks that must end before ``i`` starts because of its all-join waits and its SM queue
    (a partial wait requires no one producer in particular)."""
    out = []
    for c, t in view.tasks[i].waits:
        prods = view.producers.get(c, [])
        if wait_need(view, c, t) == len(prods):
            out.extend(prods)
    if i in view.queue_prev:
        out.append(view.queue_prev[i])
    return out


def all_join_preds(view: ProgramView, i: int) -> list[int] | None:
    """:func:`required_preds` when every wait of ``i`` is all-join (or already met); None when some
    wait counts a subset of its producers (a partial wait), or can never hold."""
    for c, t in view.tasks[i].waits:
        need = wait_need(view, c, t)
        if need > 0 and need != len(view.producers.get(c, [])):
            return None
    return required_preds(view, i)


def neighbourhood(view: ProgramView, involved: Iterable[int]) -> Neighbourhood:
    """The tasks a query about ``involved`` must encode, and the frontiers of the rest (module doc)."""
    closure = view.closure(involved)
    kept = set(involved)
    joins: dict[int, list[int]] = {}
    for i in closure:
        preds = all_join_preds(view, i)
        if preds is None:
            kept.add(i)
            kept.update(p for c, t in view.tasks[i].waits for p in view.producers.get(c, ()))
        else:
            joins[i] = preds
    frontier: dict[int, frozenset[int] | None] = {}
    order: list[int] = []
    for root in sorted(closure - kept):
        _summarise(root, kept, joins, frontier, order)
    return Neighbourhood(frozenset(kept), frontier, tuple(order), {i: joins[i] for i in frontier})


def _summarise(
    root: int,
    kept: set[int],
    joins: dict[int, list[int]],
    frontier: dict[int, frozenset[int] | None],
    order: list[int],
) -> None:
    """Depth-first, post-order: the frontier of ``root`` and of its summarised ancestors. A task met
    again while still open lies on a cycle of all-join edges and can never run."""
    if root in frontier:
        return
    open_: set[int] = set()
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        i, done = stack.pop()
        if done:
            open_.discard(i)
            frontier[i] = _join(i, kept, joins[i], frontier)
            order.append(i)
            continue
        if i in frontier:
            continue
        if i in open_:
            frontier[i] = NEVER
            continue
        open_.add(i)
        stack.append((i, True))
        stack.extend((p, False) for p in joins[i] if p not in kept and p not in frontier)


def _join(
    i: int, kept: set[int], preds: list[int], frontier: dict[int, frozenset[int] | None]
) -> frozenset[int] | None:
    if i in frontier and frontier[i] is NEVER:
        return NEVER
    parts: list[frozenset[int]] = []
    direct: set[int] = set()
    for p in preds:
        if p in kept:
            direct.add(p)
            continue
        f = frontier.get(p, NEVER)
        if f is NEVER:
            return NEVER
        parts.append(f)
    if not direct and len(set(parts)) == 1:
        return parts[0]  # a chain shares one frontier object
    return frozenset(direct.union(*parts))


class Encoding:
    """The execution constraints of one program on one solver: the full ancestor closure
    (:meth:`ensure`, incremental) or one query's :class:`Neighbourhood` (:meth:`reduced`)."""

    def __init__(self, view: ProgramView, ctx: z3.Context | None = None) -> None:
        self.view = view
        self.ctx = ctx if ctx is not None else z3.Context()
        """A context of its own: solvers sharing the global one slow each other down."""
        self.solver = z3.Solver(ctx=self.ctx)
        self._s: dict[int, z3.ArithRef] = {}
        self._e: dict[int, z3.ArithRef] = {}
        self.encoded: set[int] = set()
        self.hood: Neighbourhood | None = None

    @classmethod
    def reduced(cls, view: ProgramView, involved: Iterable[int], ctx: z3.Context) -> Encoding:
        """A fresh encoding of the neighbourhood of ``involved`` only."""
        enc = cls(view, ctx)
        enc.hood = neighbourhood(view, involved)
        for i in sorted(enc.hood.kept):
            enc.encoded.add(i)
            enc._add_task(i)
        return enc

    def start(self, i: int) -> z3.ArithRef:
        if i not in self._s:
            self._s[i] = z3.Int(f"s{i}", self.ctx)
            self._e[i] = z3.Int(f"e{i}", self.ctx)
        return self._s[i]

    def end(self, i: int) -> z3.ArithRef:
        self.start(i)
        return self._e[i]

    def started(self, i: int) -> z3.BoolRef:
        return self.start(i) < 0

    def ended(self, i: int) -> z3.BoolRef:
        return self.end(i) < 0

    def ended_before(self, p: int, i: int) -> z3.BoolRef:
        """``p`` ended before ``i`` started (through its frontier when ``p`` is summarised)."""
        if self.hood is not None and p in self.hood.frontier:
            f = self.hood.frontier[p]
            if f is NEVER:
                return z3.BoolVal(False, self.ctx)
            return z3.And([self.end(k) < self.start(i) for k in sorted(f)] or [z3.BoolVal(True, self.ctx)])
        return self.end(p) < self.start(i)

    def wait_holds(self, i: int, counter: int, threshold: int) -> z3.BoolRef:
        """The wait ``(counter, threshold)`` of task ``i`` holds when ``i`` starts."""
        prods = self.view.producers.get(counter, [])
        threshold = wait_need(self.view, counter, threshold)
        if threshold <= 0:
            return z3.BoolVal(True, self.ctx)
        if len(prods) < threshold:
            return z3.BoolVal(False, self.ctx)
        if len(prods) == threshold:
            return z3.And([self.ended_before(p, i) for p in prods])
        return z3.PbGe([(self.ended_before(p, i), 1) for p in prods], threshold)

    def ensure(self, roots: Iterable[int]) -> None:
        """Add the constraints of ``roots`` and of all their ancestors (once; full encoding only).

        The encoded set is always closed under ancestors, so the search stops at it.
        """
        assert self.hood is None, "a neighbourhood is encoded once, by Encoding.reduced"
        todo = [i for i in roots if i not in self.encoded]
        fresh: set[int] = set()
        while todo:
            i = todo.pop()
            if i not in fresh and i not in self.encoded:
                fresh.add(i)
                todo.extend(self.view.preds(i))
        for i in sorted(fresh):
            self.encoded.add(i)
            self._add_task(i)

    def _add_task(self, i: int) -> None:
        self.solver.add(self.start(i) < self.end(i))
        task = self.view.tasks[i]
        conds = [self.wait_holds(i, c, t) for c, t in task.waits]
        if i in self.view.queue_prev:
            conds.append(self.ended_before(self.view.queue_prev[i], i))
        if conds:
            self.solver.add(z3.Implies(self.started(i), z3.And(conds)))

    def check(self, goal: z3.BoolRef) -> z3.ModelRef | None:
        """Is ``goal`` reachable? The model if so, else None (UNSAT: a proof)."""
        self.solver.push()
        try:
            self.solver.add(goal)
            result = self.solver.check()
            if result == z3.unknown:
                raise SolverUnknown(f"z3 returned unknown: {self.solver.reason_unknown()}")
            return self.solver.model() if result == z3.sat else None
        finally:
            self.solver.pop()

    def trace(self, model: z3.ModelRef, keep: set[int] | None = None) -> Trace:
        """The events that happen in ``model`` (time < 0), ordered; ends first on ties.

        In a neighbourhood, the summarised tasks that the started kept tasks need run just in time."""
        timed: list[tuple[int, int, int, Event]] = []
        for i in sorted(self.encoded if keep is None else keep & self.encoded):
            s = model.eval(self.start(i), model_completion=True).as_long()
            e = model.eval(self.end(i), model_completion=True).as_long()
            tid = self.view.tasks[i].id
            if s < 0:
                timed.append((s, 2, 0, Event("start", tid)))
            if e < 0:
                timed.append((e, 0, 0, Event("end", tid)))
        if self.hood is not None:
            timed += self._summarised_events(model, keep)
        timed.sort(key=lambda x: (x[0], x[1], x[2]))
        return tuple(ev for *_, ev in timed)

    def _summarised_events(
        self, model: z3.ModelRef, keep: set[int] | None
    ) -> list[tuple[int, int, int, Event]]:
        """Each summarised task a started kept task needs runs right before the first start that
        needs it (its frontier has ended by then: the kept task's constraint says so)."""
        hood = self.hood
        assert hood is not None
        deadline: dict[int, int] = {}
        for q in hood.kept if keep is None else hood.kept & keep:
            s = model.eval(self.start(q), model_completion=True).as_long()
            for p in required_preds(self.view, q) if s < 0 else ():
                if p in hood.frontier:
                    deadline[p] = min(deadline.get(p, s), s)
        for i in reversed(hood.order):
            for p in hood.preds[i] if i in deadline else ():
                if p in hood.frontier:
                    deadline[p] = min(deadline.get(p, deadline[i]), deadline[i])
        out: list[tuple[int, int, int, Event]] = []
        for n, i in enumerate(hood.order):
            if i in deadline:
                tid = self.view.tasks[i].id
                at = deadline[i]
                out += [(at, 1, 2 * n, Event("start", tid)), (at, 1, 2 * n + 1, Event("end", tid))]
        return out

    def happened(self, model: z3.ModelRef, expr: z3.BoolRef) -> bool:
        return z3.is_true(model.eval(expr, model_completion=True))
