"""Tables of the Verification chapter and the witness gallery, computed when the site is built.

The gallery runs :func:`amkspec.smt.explain.explain` on each example of
:mod:`amkspec.programs.gallery` and renders the witness it finds (each replayed by
:func:`amkspec.evidence.replay.check_witness` first), so the pages show what the
tool prints today. Everything here takes well under a second.
"""

from __future__ import annotations

from functools import cache

from amkspec.evidence.replay import check_witness
from amkspec.ir import MegakernelProgram
from amkspec.programs.gallery import EXAMPLES, rule_only_partial_join
from amkspec.smt.explain import KIND_OF_CODE, Explanation, explain
from amkspec.smt.theorems import RULES, THEOREMS
from amkspec.smt.witness import annotate

Table = tuple[list[str], list[list[str]]]


def _lit(text: object) -> str:
    return f"``{text}``" if str(text) else ""


@cache
def _explained(title: str) -> tuple[MegakernelProgram, Explanation]:
    prog = rule_only_partial_join() if title == "rule-only partial join" else EXAMPLES[title]()
    result = explain(prog)
    for f in result.findings:
        if f.witness is not None:
            check_witness(prog, f.witness.to_dict(prog))
    return prog, result


def gallery_summary() -> Table:
    """One row per example: the finding, its status and the property the witness shows."""
    rows = []
    for title in [*EXAMPLES, "rule-only partial join"]:
        _, result = _explained(title)
        for f in result.findings:
            shown = f.witness.property if f.witness is not None else "no execution misbehaves"
            rows.append([title, _lit(f.code), f.status, f.kind, shown])
    return ["Example", "Code", "Status", "Kind", "What the witness shows"], rows


def _trace(title: str) -> Table:
    prog, result = _explained(title)
    w = next(f.witness for f in result.findings if f.witness is not None)
    names = {t.id: t.describe() for t in prog.tasks}
    rows = []
    for n, ev in enumerate(annotate(prog, w.events), 1):
        vals = ", ".join(f"c{c} = {v}" for c, v in ev["counters"].items())
        rows.append([str(n), ev["event"], _lit(names[ev["task"]]), vals])
    for b in w.blocked:
        why = [f"waits c{x.counter} ≥ {x.threshold}, c{x.counter} = {x.value}" for x in b.waits]
        if b.queue_predecessor is not None:
            why.append(f"SM queue predecessor {names[b.queue_predecessor]} has not run")
        rows.append(["—", "blocked", _lit(names[b.task]), "; ".join(why)])
    for e in w.cycle:
        rows.append(["—", "edge", f"{_lit(names[e.src])} → {_lit(names[e.dst])}", e.via])
    return ["Step", "Event", "Task", "Counters after / why"], rows


def trace_partial_join() -> Table:
    return _trace("partial-join read race")


def trace_kv() -> Table:
    return _trace("KV cache read before its append")


def trace_tiles() -> Table:
    return _trace("overlapping tiles")


def trace_threshold() -> Table:
    return _trace("unsatisfiable threshold")


def trace_sm_queue() -> Table:
    return _trace("SM-queue deadlock")


def trace_cycle() -> Table:
    return _trace("cycle")


def trace_page() -> Table:
    return _trace("page clobber")


def trace_unwritten() -> Table:
    return _trace("read of a never-written buffer")


def theorems() -> Table:
    """The bounded soundness theorems of :mod:`amkspec.smt.theorems`."""
    rows = [[_lit(t.name), t.statement, str(t.buffers), "yes" if t.sms else "no"] for t in THEOREMS]
    return ["Theorem", "Statement (for every program passing the rules)", "Buffers", "SMs"], rows


def rules() -> Table:
    """The validator's rules as the theorems encode them."""
    return ["Rule", "Codes and statement"], [[_lit(name), text] for name, text in RULES.items()]


def witness_kinds() -> Table:
    """Which diagnostic codes are checked against which kind of witness."""
    by_kind: dict[str, list[str]] = {}
    for code, kind in KIND_OF_CODE.items():
        by_kind.setdefault(kind, []).append(code)
    return ["Witness kind", "Codes"], [[kind, ", ".join(codes)] for kind, codes in by_kind.items()]
