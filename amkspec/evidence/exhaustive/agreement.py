"""When ``validate()`` and the explicit-state model checker agree on a program (issue 9).

Used by the exhaustive check (:mod:`amkspec.evidence.exhaustive.check`) and
``tools/random_agreement.py``. The model checker
(:mod:`amkspec.evidence.model_check`) reports *bad executions* (``kind``); ``validate()`` reports
*rule codes*. They agree on a program when

1. validate accepts ⇔ the model checker finds no bad execution, except for the rejections
   listed in :data:`RULE_ONLY` (spec rules that can reject a program on which no execution
   misbehaves);
2. every kind the model checker finds is explained by a code validate reports, per
   :data:`EXPLAINS`; or by R301 (a partial wait on a shared counter, spec §3.3) when the finding
   is *caused* by the partial waits: it disappears from the program in which every wait R301
   names is raised to the full join (:func:`joined`). validate's other rules reason as if every
   wait were the full join (the all-join rule makes it one), so a race, a page clobber or an
   unfenced page that only the partial wait lets happen is reported by R301 alone; a page
   clobber by a task that reads one occupant before it is written and writes the other is
   reported by the unordered read (:data:`UNORDERED_READS`).

A program rejected by a structure, memory-safety or launch rule (S1xx, M4xx, O5xx), which the
model checker does not model, counts as agreeing, except S199 (an internal validator error),
which is always a disagreement.
"""

from __future__ import annotations

import copy

from amkspec.evidence.model_check import Finding, check
from amkspec.footprint import Memo
from amkspec.ir import MegakernelProgram, Wait
from amkspec.proofs import Diagnostic, Severity, validate

RULE_ONLY = frozenset({"S103", "D203", "D204", "D205", "R301", "R306", "R304"})
"""Codes that may reject a program on which no execution misbehaves (spec rules: counters start
at 0, no task waits on its own counter, the producer→consumer graph and its SM-queue extension
MUST be acyclic even where partial waits let a cycle run (spec §3.2), the all-join, one
counter per buffer's writers, no read of a task's own unwritten output)."""

GATES = frozenset({"D203", "D204"})
"""Codes that explain any finding: on a program that is not a DAG validate skips the checks
that need one."""

EXPLAINS: dict[str, frozenset[str]] = {
    "read-race": frozenset({"R303", "R305"}),
    "write-race": frozenset({"R306"}),
    "unfenced-read": frozenset({"R303", "R305"}),
    "unfenced-write": frozenset({"R306"}),
    "unwritten-read": frozenset({"R302", "R304", "R308"}),
    "unwritten-output": frozenset({"O501", "R308"}),
    "readonly-write": frozenset({"R307"}),
    "page-clobber": frozenset({"R311"}),
    "unfenced-page": frozenset({"R311"}),
    "on-chip": frozenset({"R309"}),
    "deadlock": frozenset({"D201", "D202", "D203", "D204", "D205"}),
}
"""Model-checker finding → the validate codes that report it (R301 is decided by :func:`joined`)."""

UNORDERED_READS = frozenset({"R303", "R305"})
"""A task that reads buffer ``a`` of a page and writes buffer ``b`` of it is a page clobber for
the model checker. When that read is not ordered after ``a``'s writers, validate reports the read
(R303/R305, naming the task and ``a``) and orders the page's occupants by their writers, in which
``b`` comes first; so the finding is explained by that diagnostic, and only by it."""


def joined(prog: MegakernelProgram) -> MegakernelProgram:
    """A copy of ``prog`` in which every wait the all-join rule (R301) rejects waits for the full
    join: threshold = the counter's producer count (spec §3.3)."""
    out = copy.deepcopy(prog)
    producers: dict[object, int] = {}
    for t in out.tasks:
        producers[t.out_counter] = producers.get(t.out_counter, 0) + 1
    for t in out.tasks:
        t.waits = [
            Wait(w.counter, producers[w.counter])
            if w.counter != t.out_counter and 1 <= w.threshold < producers.get(w.counter, 0)
            else w
            for w in t.waits
        ]
    return out


def error_codes(prog: MegakernelProgram) -> set[str]:
    """The codes of validate's errors on ``prog``."""
    return {d.code for d in _errors(prog)}


def _errors(prog: MegakernelProgram) -> list[Diagnostic]:
    return [d for d in validate(prog).diagnostics if d.severity is Severity.ERROR]


def _explained(f: Finding, codes: set[str], errors: list[Diagnostic]) -> bool:
    """Whether a code validate reports explains the finding ``f`` (see :data:`EXPLAINS`, and
    :data:`UNORDERED_READS` for a task that uses one buffer of a page and writes another)."""
    if codes & EXPLAINS[f.kind]:
        return True
    return f.kind == "page-clobber" and len(f.tasks) == 1 and any(
        d.code in UNORDERED_READS and d.tasks[:1] == f.tasks and f.buffer in d.buffers for d in errors
    )


def compare(prog: MegakernelProgram, memo: Memo | None = None) -> str | None:
    """None when validate() and the model checker agree on ``prog``, else why not. ``memo``: a
    footprint cache for the model checker, shared only by programs with the same buffer table."""
    errors = _errors(prog)
    codes = {d.code for d in errors}
    if "S199" in codes:
        return f"validate failed internally: {sorted(codes)}"
    if "S103" in codes:
        return None  # rejected by the init rule; validate's other codes reason with init 0
    if any(c[0] in "MOS" for c in codes):
        return None  # rejected by a structure, memory-safety or launch rule the model does not cover
    findings = check(prog, memo=memo).findings
    kinds = {f.kind for f in findings}
    if not codes and kinds:
        return f"validate accepts, the model checker finds {sorted(kinds)}"
    if codes and not kinds and not codes <= RULE_ONLY:
        return f"validate rejects with {sorted(codes)}, no execution misbehaves"
    if codes & GATES:
        return None
    caused_by_partial_waits = kinds - check(joined(prog), memo=memo).kinds() if "R301" in codes else set()
    for f in findings:
        if f.kind not in caused_by_partial_waits and not _explained(f, codes, errors):
            return f"the model checker finds {f.kind}, validate reports {sorted(codes)}"
    return None
