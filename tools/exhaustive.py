"""Exhaustive small-scope check: ``validate()`` against the explicit-state model checker on
*every* program up to a bound (issue 9, "proofs about the code").

Run: ``python3 tools/exhaustive.py [--tasks 3] [--buffers 2] [--counters 2] [--threshold 2]
[--sm] [--pages] [--minutes 10]``. Prints the bound, the number of programs, each
disagreement (with the program's JSON) and the time; exits 1 on a disagreement.

**The program space.** Two fixed buffers, ``x`` (IO_INPUT ``[1, 2]``, a source) and ``W``
(WEIGHT ``[2, 2]``, the tile weights), plus ``--buffers`` data buffers of shape ``[1, 2]``,
each ACTIVATION, IO_OUTPUT or WEIGHT (a read-only kind); ``--counters`` counters, each with
``init`` 0 or 1. Each task reads one source (``x`` or a data buffer) and writes one data
buffer, either whole (COPY) or one column (GEMV_TILE over ``W``, ``n_off`` 0 or 1), signals
one counter, and waits on any subset of the counters with thresholds 1..``--threshold``.
``--sm`` also gives each task SM 0 or 1; ``--pages`` also puts two ACTIVATION data buffers
on one page. Every shape and param is well typed, so the verdict is decided by the
synchronisation, race and page rules, which is what the model checker models.

**Symmetry.** Without ``--sm`` no rule and no execution depends on the order of the task
list (the SM queues are the only order-sensitive rule), so task lists are enumerated as
multisets. Renaming data buffers or counters changes neither verdict nor codes, so only the
least program of each renaming class is checked. With ``--sm`` every list order is checked.

**Agreement.** For each program: validate accepts ⇔ the model checker finds no bad
execution, except for the rule-only rejections listed in :data:`RULE_ONLY` (spec rules with
no misbehaving execution: a nonzero ``init``, a partial wait on a shared counter, writers of
one buffer signalling different counters, a self-read); and every finding of the model
checker is explained by one of the codes :data:`EXPLAINS` maps it to. A program rejected by a
structure, memory-safety or launch rule (S1xx, M4xx, O5xx), which the model checker does not
model, counts as agreeing; the space above is well typed, so there this only concerns S103.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amkspec.ir import (
    TARGETS,
    Buffer,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    Page,
    PageAllocation,
    Task,
    Wait,
    dumps,
)
from amkspec.proofs import Severity, validate
from amkspec.proofs.model_check import check

TARGET = TARGETS["h100"]
KINDS = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.WEIGHT)
RULE_ONLY = frozenset({"S103", "D203", "R301", "R306", "R304"})
"""Codes that may reject a program on which no execution misbehaves (spec rules: counters start
at 0, no task waits on its own counter, the all-join, one counter per buffer's writers)."""

GATES = frozenset({"D203", "D204"})
"""Codes that explain any finding: on a program that is not a DAG validate skips the checks
that need one."""

EXPLAINS: dict[str, frozenset[str]] = {
    "read-race": frozenset({"R301", "R303", "R305"}),
    "write-race": frozenset({"R301", "R306"}),
    "unfenced-read": frozenset({"R303", "R305"}),
    "unfenced-write": frozenset({"R306"}),
    "unwritten-read": frozenset({"R302", "R304", "R308"}),
    "unwritten-output": frozenset({"O501", "R308"}),
    "readonly-write": frozenset({"R307"}),
    "page-clobber": frozenset({"R301", "R311"}),
    "unfenced-page": frozenset({"R311"}),
    "on-chip": frozenset({"R309"}),
    "deadlock": frozenset({"D201", "D202", "D203", "D204", "D205"}),
}
"""Model-checker finding → the validate codes that report it."""


@attrs.frozen
class Bound:
    """The size of the program space (see the module docstring)."""

    tasks: int = 3
    buffers: int = 2
    counters: int = 2
    threshold: int = 2
    sm: bool = False
    pages: bool = False


TaskShape = tuple[int, int, int, int, tuple[int, ...], int]
"""(source: -1 = x, data buffer; written buffer; column: -1 whole, 0/1 a tile; out_counter;
threshold per counter (0 = no wait); sm: -1 none)."""


def task_shapes(bound: Bound) -> list[TaskShape]:
    sms = (0, 1) if bound.sm else (-1,)
    return list(
        itertools.product(
            range(-1, bound.buffers),
            range(bound.buffers),
            (-1, 0, 1),
            range(bound.counters),
            itertools.product(range(bound.threshold + 1), repeat=bound.counters),
            sms,
        )
    )


Program = tuple[tuple[int, ...], tuple[int, ...], bool, tuple[TaskShape, ...]]
"""(buffer kinds, counter inits, paged, tasks)."""


def _rename(p: Program, bperm: tuple[int, ...], cperm: tuple[int, ...]) -> Program:
    kinds, inits, paged, tasks = p
    new_kinds = tuple(kinds[bperm.index(i)] for i in range(len(kinds)))
    new_inits = tuple(inits[cperm.index(i)] for i in range(len(inits)))

    def task(t: TaskShape) -> TaskShape:
        src, dst, col, oc, ths, sm = t
        new_ths = tuple(ths[cperm.index(i)] for i in range(len(ths)))
        return (bperm[src] if src >= 0 else -1, bperm[dst], col, cperm[oc], new_ths, sm)

    renamed = tuple(task(t) for t in tasks)
    return (new_kinds, new_inits, paged, renamed if any(t[5] >= 0 for t in tasks) else tuple(sorted(renamed)))


def canonical(p: Program) -> bool:
    """Whether ``p`` is the least program of its class under renaming buffers and counters."""
    nb, nc = len(p[0]), len(p[1])
    return all(
        p <= _rename(p, bp, cp)
        for bp in itertools.permutations(range(nb))
        for cp in itertools.permutations(range(nc))
    )


def programs(bound: Bound, n_tasks: int) -> Iterator[Program]:
    """Every program of exactly ``n_tasks`` tasks within ``bound``, one per symmetry class."""
    shapes = task_shapes(bound)
    lists = (
        itertools.product(shapes, repeat=n_tasks)
        if bound.sm
        else itertools.combinations_with_replacement(shapes, n_tasks)
    )
    heads = [
        (kinds, inits, paged)
        for kinds in itertools.product(range(len(KINDS)), repeat=bound.buffers)
        for inits in itertools.product((0, 1), repeat=bound.counters)
        for paged in ((False, True) if bound.pages and bound.buffers >= 2 else (False,))
        if not paged or kinds[0] == kinds[1] == 0
    ]
    for tasks in lists:
        for kinds, inits, paged in heads:
            p = (kinds, inits, paged, tuple(tasks))
            if canonical(p):
                yield p


def build(p: Program) -> MegakernelProgram:
    """The MegakernelProgram of a point of the space."""
    kinds, inits, paged, tasks = p
    f32 = DType.F32
    buffers = [
        Buffer(0, "x", BufferKind.IO_INPUT, f32, (1, 2)),
        Buffer(1, "W", BufferKind.WEIGHT, f32, (2, 2)),
        *(Buffer(2 + i, f"b{i}", KINDS[k], f32, (1, 2)) for i, k in enumerate(kinds)),
    ]
    out = []
    for n, (src, dst, col, oc, ths, sm) in enumerate(tasks):
        waits = [Wait(c, t) for c, t in enumerate(ths) if t]
        source = 0 if src < 0 else 2 + src
        if col < 0:
            op, ins, params = InstructionKind.COPY, [source], {}
        else:
            op, ins, params = InstructionKind.GEMV_TILE, [source, 1], {"K": 2, "N_tile": 1, "n_off": col}
        out.append(Task(n, op, ins, [2 + dst], oc, waits, params, sm if sm >= 0 else None))
    pages = PageAllocation({2: 0, 3: 0}, [Page(0, buffers[2].space, 8)]) if paged else None
    counters = [Counter(c, init) for c, init in enumerate(inits)]
    return MegakernelProgram(buffers=buffers, counters=counters, tasks=out, pages=pages, target=TARGET)


def compare(prog: MegakernelProgram) -> str | None:
    """None when validate() and the model checker agree on ``prog``, else why not."""
    codes = {d.code for d in validate(prog).diagnostics if d.severity is Severity.ERROR}
    if "S199" in codes:
        return f"validate failed internally: {sorted(codes)}"
    if "S103" in codes:
        return None  # rejected by the init rule; validate's other codes reason with init 0
    if any(c[0] in "MOS" for c in codes):
        return None  # rejected by a structure, memory-safety or launch rule the model does not cover
    kinds = check(prog).kinds()
    if not codes and kinds:
        return f"validate accepts, the model checker finds {sorted(kinds)}"
    if codes and not kinds and not codes <= RULE_ONLY:
        return f"validate rejects with {sorted(codes)}, no execution misbehaves"
    if codes & GATES:
        return None
    for kind in sorted(kinds):
        if not codes & EXPLAINS[kind]:
            return f"the model checker finds {kind}, validate reports {sorted(codes)}"
    return None


@attrs.define
class Report:
    """Totals of one run."""

    bound: Bound
    complete: int = 0
    """The largest task count whose every program was checked."""
    programs: int = 0
    disagreements: list[tuple[str, str]] = attrs.Factory(list)


def run(bound: Bound, seconds: float, verbose: bool = False) -> Report:
    """Check task counts 1, 2, … up to ``bound.tasks`` until ``seconds`` have passed."""
    report = Report(bound)
    stop = time.monotonic() + seconds
    for n in range(1, bound.tasks + 1):
        for p in programs(bound, n):
            if time.monotonic() > stop:
                return report
            prog = build(p)
            why = compare(prog)
            report.programs += 1
            if why is not None:
                report.disagreements.append((why, dumps(prog)))
                if verbose:
                    print(f"DISAGREEMENT: {why}\n{dumps(prog)}", flush=True)
        report.complete = n
        if verbose:
            print(f"  all programs of {n} task(s) checked ({report.programs} so far)", flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--buffers", type=int, default=2)
    parser.add_argument("--counters", type=int, default=2)
    parser.add_argument("--threshold", type=int, default=2)
    parser.add_argument("--sm", action="store_true")
    parser.add_argument("--pages", action="store_true")
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args()
    bound = Bound(args.tasks, args.buffers, args.counters, args.threshold, args.sm, args.pages)
    start = time.perf_counter()
    print(f"bound: {json.dumps(attrs.asdict(bound))}", flush=True)
    report = run(bound, args.minutes * 60, verbose=True)
    print(
        f"complete up to {report.complete} task(s); programs checked: {report.programs}; "
        f"disagreements: {len(report.disagreements)}; time: {time.perf_counter() - start:.1f} s"
    )
    sys.exit(1 if report.disagreements else 0)


if __name__ == "__main__":
    main()
