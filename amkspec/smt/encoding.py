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

Constraints are added lazily for the ancestor closure of the tasks a query
names (:meth:`Encoding.ensure`) and stay on one solver; each query pushes its
goal, checks and pops, so later queries reuse the earlier work.
"""

from __future__ import annotations

from collections.abc import Iterable

import z3

from amkspec.proofs.trace import Event, Trace
from amkspec.smt.view import ProgramView, SolverUnknown


class Encoding:
    """The execution constraints of one program on one incremental solver."""

    def __init__(self, view: ProgramView) -> None:
        self.view = view
        self.ctx = z3.Context()
        """A context of its own: solvers sharing the global one slow each other down."""
        self.solver = z3.Solver(ctx=self.ctx)
        self._s: dict[int, z3.ArithRef] = {}
        self._e: dict[int, z3.ArithRef] = {}
        self.encoded: set[int] = set()

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
        """``p`` ended before ``i`` started."""
        return self.end(p) < self.start(i)

    def wait_holds(self, i: int, counter: int, threshold: int) -> z3.BoolRef:
        """The wait ``(counter, threshold)`` of task ``i`` holds when ``i`` starts."""
        prods = self.view.producers.get(counter, [])
        threshold -= self.view.init.get(counter, 0)
        if threshold <= 0:
            return z3.BoolVal(True, self.ctx)
        if len(prods) < threshold:
            return z3.BoolVal(False, self.ctx)
        if len(prods) == threshold:
            return z3.And([self.ended_before(p, i) for p in prods])
        return z3.PbGe([(self.ended_before(p, i), 1) for p in prods], threshold)

    def ensure(self, roots: Iterable[int]) -> None:
        """Add the constraints of ``roots`` and of all their ancestors (once).

        The encoded set is always closed under ancestors, so the search stops at it.
        """
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
        """The events that happen in ``model`` (time < 0), ordered; ends first on ties."""
        timed: list[tuple[int, int, Event]] = []
        for i in sorted(self.encoded if keep is None else keep & self.encoded):
            s = model.eval(self.start(i), model_completion=True).as_long()
            e = model.eval(self.end(i), model_completion=True).as_long()
            tid = self.view.tasks[i].id
            if s < 0:
                timed.append((s, 1, Event("start", tid)))
            if e < 0:
                timed.append((e, 0, Event("end", tid)))
        timed.sort(key=lambda x: (x[0], x[1]))
        return tuple(ev for _, _, ev in timed)

    def happened(self, model: z3.ModelRef, expr: z3.BoolRef) -> bool:
        return z3.is_true(model.eval(expr, model_completion=True))
