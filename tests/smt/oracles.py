"""The cross-check of the three oracles on one program (test helper).

``validate()`` (algorithmic), the Z3 queries and the explicit-state model
checker must agree: where validate() accepts, neither finds a bad execution;
every Z3 witness replays, makes validate() reject, and the model checker
finds the same race or deadlock.
"""

from __future__ import annotations

from collections import Counter

from amkspec.evidence.model_check import check
from amkspec.evidence.replay import check_witness
from amkspec.ir import MegakernelProgram
from amkspec.proofs import Severity, validate
from amkspec.smt import Prover, Unencodable
from amkspec.smt.explain import explain

TALLY: Counter[str] = Counter()
"""Counts over a test session: accepted, rejected, witnessed and rule-only rejections."""

BY_CODE: Counter[str] = Counter()
"""Findings by code and status ("R306 rule-only": 12, ...)."""


def crosscheck(prog: MegakernelProgram, model_check: bool = True) -> None:
    result = validate(prog)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    try:
        prover = Prover(prog)
    except Unencodable:
        assert errors, "a program the encoding cannot read must be rejected"
        return
    results = prover.prove_all()
    for r in results:
        if r.witness is not None:
            check_witness(prog, r.witness.to_dict(prog))
    witnessed = [r for r in results if r.witness is not None]
    TALLY["accepted" if not errors else "rejected"] += 1
    if errors:
        labelled = explain(prog, validation=result)
        TALLY["witnessed findings"] += labelled.witnessed
        TALLY["rule-only findings"] += labelled.rule_only
        BY_CODE.update(f"{f.code} {f.status}" for f in labelled.findings)
    if witnessed:
        assert errors, f"validate() accepts but Z3 found {witnessed[0].witness}"
    if not model_check:
        return
    mc = check(prog)
    if not errors:
        assert not mc.findings, f"validate() accepts but the model checker found {mc.findings[0]}"
    z3_readers = {r.tasks[0] for r in results if r.query.startswith("read-race") and r.witness is not None}
    assert z3_readers == {reader for reader, _, _ in mc.read_races()}
    z3_pairs = {r.tasks for r in results if r.kind == "write-race" and r.witness is not None}
    assert z3_pairs == mc.write_races()
    z3_dead = any(r.kind == "deadlock" and r.witness is not None for r in results)
    assert z3_dead == ("deadlock" in mc.kinds())
