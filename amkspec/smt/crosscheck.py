"""The cross-check of the three oracles on one program (spec §3: the validator against its proofs).

``validate()`` (algorithmic), the Z3 queries and the explicit-state model checker must agree: where
validate() accepts, neither finds a bad execution; every Z3 witness replays, makes validate()
reject, and the model checker finds the same race or deadlock. The tests run it on generated
programs; ``benchmarks/smt.py`` times it.
"""

from __future__ import annotations

from collections import Counter

from amkspec.evidence.model_check import check
from amkspec.evidence.replay import check_witness
from amkspec.ir import MegakernelProgram
from amkspec.proofs import Severity, validate
from amkspec.smt import Prover, Unencodable
from amkspec.smt.explain import explain


class Disagreement(AssertionError):
    """Two oracles disagree about a program (a bug in one of them)."""


def _require(holds: bool, message: str) -> None:
    if not holds:
        raise Disagreement(message)


def crosscheck(prog: MegakernelProgram, model_check: bool = True, tally: Counter[str] | None = None,
               by_code: Counter[str] | None = None) -> None:
    """Raise :class:`Disagreement` unless the oracles agree on ``prog``. ``tally`` counts accepted,
    rejected, witnessed and rule-only rejections; ``by_code`` the findings by code and status
    ("R306 rule-only": 12, ...)."""
    tally = Counter() if tally is None else tally
    by_code = Counter() if by_code is None else by_code
    result = validate(prog)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    try:
        prover = Prover(prog)
    except Unencodable:
        _require(bool(errors), "a program the encoding cannot read must be rejected")
        return
    results = prover.prove_all()
    for r in results:
        if r.witness is not None:
            check_witness(prog, r.witness.to_dict(prog))
    witnessed = [r for r in results if r.witness is not None]
    tally["accepted" if not errors else "rejected"] += 1
    if errors:
        labelled = explain(prog, validation=result)
        tally["witnessed findings"] += labelled.witnessed
        tally["rule-only findings"] += labelled.rule_only
        by_code.update(f"{f.code} {f.status}" for f in labelled.findings)
    if witnessed:
        _require(bool(errors), f"validate() accepts but Z3 found {witnessed[0].witness}")
    if not model_check:
        return
    mc = check(prog)
    if not errors:
        _require(not mc.findings, f"validate() accepts but the model checker found "
                                  f"{mc.findings[0] if mc.findings else None}")
    z3_readers = {r.tasks[0] for r in results if r.query.startswith("read-race") and r.witness is not None}
    _require(z3_readers == {reader for reader, _, _ in mc.read_races()}, "read races differ")
    z3_pairs = {r.tasks for r in results if r.kind == "write-race" and r.witness is not None}
    _require(z3_pairs == mc.write_races(), "write races differ")
    z3_dead = any(r.kind == "deadlock" and r.witness is not None for r in results)
    _require(z3_dead == ("deadlock" in mc.kinds()), "deadlock verdicts differ")
