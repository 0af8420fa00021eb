"""The kit tests itself (spec §9.7): deliberately broken implementations (``corpus/broken.py``)
run through the real protocol must fail exactly the cases their defect predicts — computed here
from the case files alone — with the rules of those cases named in the report; and an
implementation that speaks only what the specification requires conforms at ``core`` and not at
``strict``, its vocabulary reported but never failing it."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pytest

from amkspec.conformance import report
from amkspec.conformance.cases import Case, default_cases_dir, program_text
from amkspec.conformance.judge import FAIL
from amkspec.conformance.kit import KitRun, run_kit
from amkspec.conformance.rules import RULES, VOCABULARY, Keyword, Level
from amkspec.conformance.tensors import decode
from corpus.broken import LOOSE

CASES_DIR = default_cases_dir()
Predicate = Callable[[Case], bool]


def _expect(case: Case) -> dict:  # type: ignore[type-arg]
    return case.body.get("expect", {})


def accept_everything_fails(case: Case) -> bool:
    """It declares neither ``run`` nor its dtypes: run and refuse cases are not applicable."""
    e = _expect(case)
    return {
        "format": e.get("outcome") == "refused",
        "validate": e.get("verdict") == "rejected" or bool(e.get("codes")),
        "refuse": False,
        "run": False,
    }[case.kind]


def run_everything_fails(case: Case) -> bool:
    """Its own validator rejects what the case expects rejected, and its VM runs it anyway."""
    return case.kind == "refuse" and _expect(case)["outcome"] == "refused"


def reject_everything_fails(case: Case) -> bool:
    """Its VM refuses what its validator rejects, which is everything: consistent, so the refuse
    cases pass; the verdicts fail in the validate cases."""
    e = _expect(case)
    if case.kind == "format":
        return e["outcome"] == "loaded" or e["error_class"] != "FormatError" or e["path"] != "(root)"
    if case.kind == "validate":
        return e["verdict"] == "accepted" or bool(e.get("codes"))
    return case.kind == "run"


def loose_tolerance_fails(case: Case) -> bool:
    if case.kind != "run":
        return False
    atol, rtol = case.body["tolerance"]["F32"]
    for step in case.body["steps"]:
        for want in step["expect"]["outputs"].values():
            if want["dtype"] == "F32":
                e = np.abs(decode(want, case.base).astype(np.float64))
                if (e * (LOOSE - 1) > atol + rtol * e).any():
                    return True
    return False


def crash_on_rope_fails(case: Case) -> bool:
    return case.body.get("opcode") == "ROPE"


def hang_on_unknown_fails(case: Case) -> bool:
    return '"x_vendor"' in case.body.get("document", "")


def malformed_reply_fails(case: Case) -> bool:
    return case.kind == "validate" and '"KV_CACHE"' in program_text(case.body, case.base)


BROKEN: list[tuple[str, str | None, Predicate, int | None]] = [
    ("accept-everything", None, accept_everything_fails, 0),
    ("run-everything", "refuse/", run_everything_fails, 0),
    ("reject-everything", None, reject_everything_fails, 0),
    ("loose-tolerance", "run/", lambda c: loose_tolerance_fails(c), 0),
    ("crash-on-rope", "run/rope", crash_on_rope_fails, 3),
    ("hang-on-unknown", "format/", hang_on_unknown_fails, 2),
    ("malformed-reply", "memory/M43", malformed_reply_fails, None),
]
"""Name, the cases it runs (an id filter), which of them it must fail, how many restarts it causes
(None: one per failed case — every failure is a protocol failure)."""


def _run(name: str, select: str | None) -> KitRun:
    """Run the broken implementation ``name``; a short timeout for the one that hangs (its cases
    never import torch, so a healthy answer is always quick), but a start may take its time."""
    timeout = 2.0 if name == "hang-on-unknown" else 60.0
    return run_kit(
        f"{sys.executable} -m corpus.broken {name}",
        CASES_DIR,
        select=select,
        timeout_s=timeout,
        start_timeout_s=60.0,
    )


@pytest.mark.parametrize(("name", "select", "fails", "restarts"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_implementation_fails_exactly_the_predicted_cases(
    name: str, select: str | None, fails: Predicate, restarts: int | None
) -> None:
    run = _run(name, select)
    assert run.results, name
    failed = {r.case.id for r in run.results if r.status == FAIL}
    predicted = {r.case.id for r in run.results if fails(r.case)}
    assert predicted, name
    assert sorted(failed ^ predicted) == []
    assert not run.passed_at(Level.STRICT)
    assert run.restarts == (len(failed) if restarts is None else restarts)
    doc = report.to_json(run)
    named = {rid for rid, rule in doc["rules"].items() if rule["status"]["strict"] == FAIL}
    wanted = {rid for r in run.results for f in r.findings for rid in f.rules}
    assert wanted and wanted <= named
    text = report.summary(run)
    assert all(rid in text for rid in wanted) and "strict: DOES NOT CONFORM" in text


def test_the_crash_and_the_hang_are_reported_with_their_reason() -> None:
    crash = _run("crash-on-rope", "run/rope_f32")
    assert crash.results[0].reason.startswith("crashed on 'run' (exit status 3)")
    hang = _run("hang-on-unknown", "format/unknown_fields")
    assert "timeout" in hang.results[0].reason
    rules = report.to_json(hang)["rules"]
    failed = {rid for rid, rule in rules.items() if rule["status"]["strict"] == FAIL}
    assert failed >= {"FMT-UNK-1", "FMT-UNK-2", "CONF-REPLY-1"}
    assert not hang.passed_at(Level.CORE)  # no answer breaks the protocol at every level


def test_a_missing_capability_makes_cases_not_applicable() -> None:
    """The ten-minute adapter declares ``load`` and ``validate`` only: run cases are not applicable."""
    adapter = f"{sys.executable} -m corpus.examples.ten_minute_adapter"
    run = run_kit(adapter, CASES_DIR, select="run/add_f")
    assert "run" not in set(run.implementation["capabilities"])
    assert run.results and {r.status for r in run.results} == {"not applicable"}
    assert run.passed


def test_a_spec_minimal_implementation_conforms_at_core_but_not_at_strict() -> None:
    """It drops unknown fields (spec §6), reads duplicate keys, and speaks none of amkspec's vocabulary:
    the strict rules it misses fail only at strict, its vocabulary findings fail neither level."""
    run = run_kit(f"{sys.executable} -m corpus.broken spec-minimal", CASES_DIR, level=Level.CORE)
    assert run.passed and run.passed_at(Level.CORE) and not run.passed_at(Level.STRICT)
    binding = {rid for r in run.results if r.fails_at(Level.STRICT) for f in r.findings for rid in f.rules}
    assert binding == {"FMT-UNK-2", "FMT-DUP-1"}
    reported = {rid for r in run.results for f in r.findings for rid in f.rules}
    assert reported - binding == VOCABULARY
    assert all(RULES[rid].keyword is Keyword.SHOULD for rid in VOCABULARY)
    text = report.summary(run)
    assert "core: CONFORMS" in text and "strict: DOES NOT CONFORM" in text
    assert text.rstrip().endswith("verdict at level core: CONFORMS")
    doc = report.to_json(run)
    assert doc["levels"]["core"]["passed"] and not doc["levels"]["strict"]["passed"]
    assert doc["rules"]["FMT-UNK-2"]["status"] == {"strict": FAIL}
    assert doc["rules"]["FMT-UNK-1"]["status"] == {"core": "passed", "strict": "passed"}


def test_amkspec_meets_every_rule_of_both_levels_and_its_vocabulary() -> None:
    run = run_kit(f"{sys.executable} -m amkspec.conformance.adapter", CASES_DIR, level=Level.STRICT)
    assert run.passed and [r.case.id for r in run.results if r.findings] == []
