"""Bounded soundness theorems: the validator's rules imply safe executions, for every small program.

Each theorem asks Z3 for a *symbolic* program of at most ``n`` tasks — out_counters, counter
``init`` values, waits, thresholds, SM assignment, buffer kinds (transient, KV cache, read-only)
and widths, reads and writes (with column footprints) all unknown — that satisfies the
validator's rules **and** has a bad execution (the same prefix semantics as
:mod:`amkspec.smt.encoding`, counters starting at their ``init``). UNSAT proves the rules sound
for every program up to that size, in this model:

* a task reads every column of each buffer it reads and writes the columns ``[lo, hi)`` of each
  buffer it writes (the same range for all of them), inside the buffer's width;
* the race theorems range over **two** buffers, each ACTIVATION/IO_OUTPUT (fresh), KV_CACHE or
  read-only (WEIGHT, CONST, IO_INPUT); the read-race theorem covers reads of read-only buffers;
* the rules are the codes of :data:`RULES`: S103 (init 0), R307 (no write to a read-only kind),
  R304/R308 (every column read of a fresh buffer is written by another task), and the
  deadlock, all-join, provenance and write-write rules.

Why the bounds are only on tasks: a program with fewer tasks embeds into one with ``n`` (pad
with independent tasks that wait on nothing and touch nothing); ``n`` counters suffice because
only counters that have producers can be waited on; one wait per counter is enough (two waits
on one counter mean the larger threshold); ``n`` SMs cover every assignment; ``n`` columns cover
every distinct tile boundary of ``n`` tasks. Not modelled: KV windows and row ranges (KV reads
are whole), element regions other than column ranges, FUSED recipes, shapes and dtypes (M4xx).
The link from these rules to the code of ``validate()`` is the exhaustive check
(:mod:`amkspec.evidence.exhaustive`, ``amkspec check-validator``), not these theorems.

Rule sets: ``"amkspec"`` is what :func:`amkspec.proofs.validate` enforces;
``"original"`` replaces the SM-queue rule by the reference validator's
pairwise check; ``"spec-prose"`` replaces happens-before provenance by the
spec's wording ("some transitive predecessor wrote it"). The last two are
expected to fail: their counterexamples are why amkspec's rules differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import attrs
import z3

RULE_SETS = ("amkspec", "original", "spec-prose")

RULES = {
    "threshold": "D201/D202: every wait has 1 ≤ threshold ≤ #producers",
    "self-wait": "D203: no task waits on its own out_counter",
    "acyclic": "D204: the producer→consumer graph is acyclic",
    "sm-queue": "D205: dependency plus SM-queue edges are acyclic",
    "all-join": "R301: a wait on a shared counter waits for all its producers",
    "init": "S103: every counter starts at 0",
    "read-only": "R307: no task writes a read-only buffer (WEIGHT, CONST, IO_INPUT)",
    "never-produced": "R302: a read transient buffer has a writer (KV caches excepted)",
    "coverage": "R304/R308: every column a task reads of an ACTIVATION/IO_OUTPUT is written by another task",
    "provenance": "R303/R305: every other writer of a read buffer is a dependency ancestor",
    "write-write": "R306: writers are disjoint tiles under one counter, or totally ordered",
}
"""The validator's rules as the theorems encode them (name → code and statement)."""


@attrs.frozen
class TheoremResult:
    """The outcome of one bounded soundness theorem under one rule set (spec §3.3)."""

    name: str
    statement: str
    bound: int
    rules: str
    holds: bool | None
    """True: UNSAT (proved up to the bound); False: counterexample; None: solver gave up."""
    seconds: float
    """Wall-clock time."""
    cpu_seconds: float
    """Processor time of this process (the solver runs in it): robust to a busy machine."""
    counterexample: str = ""


class SymbolicProgram:
    """A program of ``n`` tasks whose structure is unknown, and one execution prefix of it."""

    def __init__(self, n: int, buffers: int, rules: str, sms: bool, drop: Iterable[str] = ()) -> None:
        if rules not in RULE_SETS:
            raise ValueError(f"unknown rule set {rules!r}")
        self.n, self.rules, self.nb = n, rules, buffers
        self.drop = frozenset(drop)
        if self.drop - set(RULES):
            raise ValueError(f"unknown rule(s) {sorted(self.drop - set(RULES))}")
        r = range(n)
        self.prod = [[z3.Bool(f"prod_{p}_{c}") for c in r] for p in r]
        self.waits = [[z3.Bool(f"wait_{i}_{c}") for c in r] for i in r]
        self.thr = [[z3.Int(f"thr_{i}_{c}") for c in r] for i in r]
        self.sm = [z3.Int(f"sm_{i}") for i in r]
        self.reads = [[z3.Bool(f"read_{i}_{b}") for b in range(buffers)] for i in r]
        self.writes = [[z3.Bool(f"write_{i}_{b}") for b in range(buffers)] for i in r]
        self.lo = [z3.Int(f"lo_{i}") for i in r]
        self.hi = [z3.Int(f"hi_{i}") for i in r]
        self.kv = [z3.Bool(f"kv_{b}") for b in range(buffers)]
        self.ro = [z3.Bool(f"readonly_{b}") for b in range(buffers)]
        self.width = [z3.Int(f"width_{b}") for b in range(buffers)]
        self.init = [z3.Int(f"init_{c}") for c in r]
        self.rank = [z3.Int(f"rank_{i}") for i in r]
        self.anc = [[z3.Bool(f"anc_{a}_{b}") for b in r] for a in r]
        self.s = [z3.Int(f"s_{i}") for i in r]
        self.e = [z3.Int(f"e_{i}") for i in r]
        self.facts: list[z3.BoolRef] = []
        self._shape(sms)
        self._rules()
        self._execution()

    # -- the program's shape ---------------------------------------------------------------------
    def nprod(self, c: int) -> z3.ArithRef:
        return z3.Sum([z3.If(self.prod[p][c], 1, 0) for p in range(self.n)])

    def edge(self, a: int, b: int) -> z3.BoolRef:
        return z3.Or([z3.And(self.prod[a][c], self.waits[b][c]) for c in range(self.n)])

    def same_queue(self, a: int, b: int) -> z3.BoolRef:
        return z3.And(self.sm[a] >= 0, self.sm[a] == self.sm[b])

    def _shape(self, sms: bool) -> None:
        n, f = self.n, self.facts
        for i in range(n):
            f.append(z3.PbEq([(x, 1) for x in self.prod[i]], 1))
            # Counter names are interchangeable: number them by first producer, so task i
            # signals one of the counters 0..i (symmetry breaking; every program has this form).
            f.extend(z3.Not(self.prod[i][c]) for c in range(i + 1, n))
            f.append(z3.And(self.sm[i] >= -1, self.sm[i] < n) if sms else self.sm[i] == -1)
            f.append(z3.And(self.lo[i] >= 0, self.lo[i] < self.hi[i], self.hi[i] <= n))
            f.extend(z3.And(self.thr[i][c] >= 1, self.thr[i][c] <= n) for c in range(n))
            f.append(z3.And(self.init[i] >= 0, self.init[i] <= n))
        for b in range(self.nb):
            f.append(z3.And(self.width[b] >= 1, self.width[b] <= n, z3.Not(z3.And(self.kv[b], self.ro[b]))))
            f.extend(z3.Implies(self.writes[i][b], self.hi[i] <= self.width[b]) for i in range(n))

    # -- the validator's rules -------------------------------------------------------------------
    def rule(self, name: str, fact: z3.BoolRef) -> None:
        """Assert one instance of rule ``name`` (unless the rule is dropped)."""
        if name not in self.drop:
            self.facts.append(fact)

    def _rules(self) -> None:
        n, f = self.n, self.facts
        for i in range(n):
            for c in range(n):
                w, t, np_ = self.waits[i][c], self.thr[i][c], self.nprod(c)
                self.rule("threshold", z3.Implies(w, t <= np_))
                self.rule("all-join", z3.Implies(z3.And(w, np_ > 1), t == np_))
                self.rule("self-wait", z3.Not(z3.And(w, self.prod[i][c])))
            self.rule("init", self.init[i] == 0)
        for a in range(n):
            for b in range(n):
                dep = self.edge(a, b)
                self.rule("acyclic", z3.Implies(dep, self.rank[a] < self.rank[b]))
                if self.rules == "original":  # pairwise queue rule
                    if a >= b:
                        self.rule("sm-queue", z3.Not(z3.And(dep, self.same_queue(a, b))))
                elif a < b:  # D205 dag ∪ queue
                    self.rule("sm-queue", z3.Implies(self.same_queue(a, b), self.rank[a] < self.rank[b]))
                f.append(
                    self.anc[a][b]
                    == z3.Or(
                        dep, *[z3.And(self.anc[a][k], self.edge(k, b)) for k in range(n) if k not in (a, b)]
                    )
                )
        for b in range(self.nb):
            self._buffer_rules(b)

    def _buffer_rules(self, b: int) -> None:
        n = self.n
        writers = [self.writes[w][b] for w in range(n)]
        fresh = z3.And(z3.Not(self.kv[b]), z3.Not(self.ro[b]))
        for w in range(n):
            self.rule("read-only", z3.Implies(self.ro[b], z3.Not(writers[w])))
        for r in range(n):
            self.rule("never-produced", z3.Implies(z3.And(self.reads[r][b], fresh), z3.Or(writers)))
            for k in range(n):
                covered = z3.Or(
                    [z3.And(writers[w], self.lo[w] <= k, k < self.hi[w]) for w in range(n) if w != r]
                )
                self.rule("coverage", z3.Implies(z3.And(self.reads[r][b], fresh, k < self.width[b]), covered))
            if self.rules == "spec-prose":
                some = z3.Or([z3.And(self.writes[w][b], self.anc[w][r]) for w in range(n) if w != r])
                others = z3.Or([writers[w] for w in range(n) if w != r])
                self.rule(
                    "provenance", z3.Implies(z3.And(self.reads[r][b], z3.Not(self.ro[b]), others), some)
                )
            else:
                for w in range(n):
                    if w != r:
                        read = z3.And(self.reads[r][b], z3.Not(self.ro[b]), writers[w])
                        self.rule("provenance", z3.Implies(read, self.anc[w][r]))
        pairs = [(x, y) for x in range(n) for y in range(x + 1, n)]
        both = {p: z3.And(self.writes[p[0]][b], self.writes[p[1]][b]) for p in pairs}
        tiles = z3.And(
            [
                z3.Implies(
                    both[(x, y)],
                    z3.And(
                        z3.Not(self.overlap(x, y)), *[self.prod[x][c] == self.prod[y][c] for c in range(n)]
                    ),
                )
                for x, y in pairs
            ]
        )
        ordered = z3.And([z3.Implies(both[(x, y)], z3.Or(self.anc[x][y], self.anc[y][x])) for x, y in pairs])
        self.rule("write-write", z3.Or(self.ro[b], tiles, ordered))

    def overlap(self, a: int, b: int) -> z3.BoolRef:
        return z3.And(self.lo[a] < self.hi[b], self.lo[b] < self.hi[a])

    # -- one execution prefix (events happen at negative times) -----------------------------------
    def started(self, i: int) -> z3.BoolRef:
        return self.s[i] < 0

    def ended(self, i: int) -> z3.BoolRef:
        return self.e[i] < 0

    def _execution(self) -> None:
        n, f = self.n, self.facts
        for i in range(n):
            f.append(self.s[i] < self.e[i])
            for c in range(n):
                got = self.init[c] + z3.Sum(
                    [z3.If(z3.And(self.prod[p][c], self.e[p] < self.s[i]), 1, 0) for p in range(n)]
                )
                f.append(z3.Implies(z3.And(self.started(i), self.waits[i][c]), got >= self.thr[i][c]))
            for j in range(i):
                f.append(z3.Implies(z3.And(self.started(i), self.same_queue(j, i)), self.e[j] < self.s[i]))

    def blocked(self, i: int) -> z3.BoolRef:
        unmet = [
            z3.And(
                self.waits[i][c],
                self.init[c]
                + z3.Sum([z3.If(z3.And(self.prod[p][c], self.ended(p)), 1, 0) for p in range(self.n)])
                < self.thr[i][c],
            )
            for c in range(self.n)
        ]
        queue = [z3.And(self.same_queue(j, i), z3.Not(self.ended(j))) for j in range(i)]
        return z3.Or(unmet + queue)


# -- the bad executions --------------------------------------------------------------------------


def _read_race(p: SymbolicProgram, kv: bool) -> z3.BoolRef:
    """Some reader of some buffer (of any kind, KV caches when ``kv``) starts before another
    writer of it ends."""
    n = p.n
    return z3.Or(
        [
            z3.And(p.kv[b] == kv, p.reads[r][b], p.writes[w][b], p.started(r), p.s[r] < p.e[w])
            for b in range(p.nb)
            for r in range(n)
            for w in range(n)
            if r != w
        ]
    )


def _unwritten_read(p: SymbolicProgram) -> z3.BoolRef:
    """A reader of an ACTIVATION/IO_OUTPUT starts while some column of it has not been written
    by another task that ended before."""
    n = p.n
    bad = []
    for b in range(p.nb):
        fresh = z3.And(z3.Not(p.kv[b]), z3.Not(p.ro[b]))
        for r in range(n):
            for k in range(n):
                written = z3.Or(
                    [
                        z3.And(p.writes[w][b], p.lo[w] <= k, k < p.hi[w], p.e[w] < p.s[r])
                        for w in range(n)
                        if w != r
                    ]
                )
                bad.append(z3.And(fresh, p.reads[r][b], p.started(r), k < p.width[b], z3.Not(written)))
    return z3.Or(bad)


def _write_race(p: SymbolicProgram) -> z3.BoolRef:
    n = p.n
    return z3.Or(
        [
            z3.And(
                p.writes[a][b],
                p.writes[c][b],
                p.overlap(a, c),
                p.started(a),
                p.started(c),
                p.s[a] < p.e[c],
                p.s[c] < p.e[a],
            )
            for b in range(p.nb)
            for a in range(n)
            for c in range(a + 1, n)
        ]
    )


def _deadlock(p: SymbolicProgram) -> z3.BoolRef:
    n = p.n
    return z3.And(
        *[z3.Implies(p.started(i), p.ended(i)) for i in range(n)],
        *[z3.Or(p.started(i), p.blocked(i)) for i in range(n)],
        z3.Or([z3.Not(p.ended(i)) for i in range(n)]),
    )


def _page_clobber(p: SymbolicProgram) -> z3.BoolRef:
    """Buffers 0 and 1 share a page; a write of 1 lands in the live range of 0 (by symmetry, WLOG)."""
    n, f = p.n, []
    uses = [[z3.Or(p.reads[u][b], p.writes[u][b]) for u in range(n)] for b in (0, 1)]
    for first, then in ((0, 1), (1, 0)):
        f.append(
            z3.And(
                [
                    z3.Implies(z3.And(uses[first][u], p.writes[v][then]), p.anc[u][v])
                    for u in range(n)
                    for v in range(n)
                ]
            )
        )
    ordered = z3.Or(f)
    clobber = z3.Or(
        [
            z3.And(
                p.writes[u1][0],
                p.reads[u2][0],
                p.writes[v][1],
                p.ended(u1),
                p.started(v),
                p.started(u2),
                p.e[u1] < p.e[v],
                p.s[v] < p.e[u2],
            )
            for u1 in range(n)
            for u2 in range(n)
            for v in range(n)
            if v != u1
        ]
    )
    return z3.And(ordered, clobber)


@attrs.frozen
class Theorem:
    """A theorem: no symbolic program obeying the rules has a ``bad`` execution (spec §3.3)."""

    name: str
    statement: str
    buffers: int
    sms: bool
    bad: Callable[[SymbolicProgram], z3.BoolRef]


THEOREMS: tuple[Theorem, ...] = (
    Theorem(
        "deadlock-freedom",
        "with no SM assigned, no accepted program reaches a stuck state",
        0,
        False,
        _deadlock,
    ),
    Theorem(
        "sm-queue-deadlock-freedom",
        "with any SM assignment, no accepted program reaches a stuck state",
        0,
        True,
        _deadlock,
    ),
    Theorem(
        "read-race-freedom",
        "no read of any non-KV buffer (read-only kinds included) can start before another writer ends",
        2,
        True,
        lambda p: _read_race(p, kv=False),
    ),
    Theorem(
        "kv-ordering",
        "no read of a KV_CACHE written this pass can start before its writer ends",
        2,
        True,
        lambda p: _read_race(p, kv=True),
    ),
    Theorem(
        "unwritten-read-freedom",
        "no task reads a column of an ACTIVATION/IO_OUTPUT before another task has written it",
        2,
        True,
        _unwritten_read,
    ),
    Theorem(
        "write-race-freedom",
        "no two writers with overlapping footprints can run at the same time",
        2,
        True,
        _write_race,
    ),
    Theorem(
        "page-clobber-freedom",
        "no write of one page occupant lands in another occupant's live range",
        2,
        True,
        _page_clobber,
    ),
)


def prove(
    theorem: Theorem, n: int, rules: str = "amkspec", timeout_s: float | None = None, drop: Iterable[str] = ()
) -> TheoremResult:
    """Prove ``theorem`` for every program of at most ``n`` tasks under ``rules`` (less ``drop``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    p = SymbolicProgram(n, theorem.buffers, rules, theorem.sms, drop)
    solver = z3.Solver()
    if timeout_s is not None:
        solver.set("timeout", int(timeout_s * 1000))
    solver.add(p.facts)
    solver.add(theorem.bad(p))
    result = solver.check()
    holds = None if result == z3.unknown else result == z3.unsat
    example = _describe(p, solver.model()) if result == z3.sat else ""
    return TheoremResult(
        theorem.name,
        theorem.statement,
        n,
        rules,
        holds,
        time.perf_counter() - t0,
        time.process_time() - c0,
        example,
    )


def _describe(p: SymbolicProgram, m: z3.ModelRef) -> str:
    """The counterexample program, one task per line."""

    def val(x: z3.BoolRef) -> bool:
        return bool(z3.is_true(m.eval(x, model_completion=True)))

    def num(x: z3.ArithRef) -> int:
        return int(m.eval(x, model_completion=True).as_long())

    lines = []
    for i in range(p.n):
        oc = next(c for c in range(p.n) if val(p.prod[i][c]))
        waits = [f"c{c}>={num(p.thr[i][c])}" for c in range(p.n) if val(p.waits[i][c])]
        rw = [
            f"{'R' if val(p.reads[i][b]) else ''}{'W' if val(p.writes[i][b]) else ''}b{b}"
            for b in range(p.nb)
            if val(p.reads[i][b]) or val(p.writes[i][b])
        ]
        sm, s, e = num(p.sm[i]), num(p.s[i]), num(p.e[i])
        when = "not started" if s >= 0 else f"start {s}, " + (f"end {e}" if e < 0 else "running")
        lines.append(
            f"task {i}: signals c{oc}; waits [{', '.join(waits)}]; {' '.join(rw) or 'no buffers'}; "
            f"cols [{num(p.lo[i])},{num(p.hi[i])}); sm {'-' if sm == -1 else sm}; {when}"
        )
    return "\n".join(lines)


def necessity(n: int = 3) -> dict[str, TheoremResult | None]:
    """For each rule, the first theorem that fails up to ``n`` tasks once the rule is dropped."""
    out: dict[str, TheoremResult | None] = {}
    for rule in RULES:
        out[rule] = next((r for t in THEOREMS if (r := prove(t, n, drop=[rule])).holds is False), None)
    return out
