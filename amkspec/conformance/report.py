"""Conformance reports: JSON, JUnit XML and a human summary by chapter (spec §9.6)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from amkspec.conformance.judge import FAIL, NA, PASS
from amkspec.conformance.kit import OUTSIDE, UNTESTED, KitRun
from amkspec.conformance.protocol import PROTOCOL_VERSION
from amkspec.conformance.rules import RULES
from amkspec.ir import IR_VERSION

CHAPTERS = {
    1: "Data model",
    2: "Synchronisation and execution",
    3: "Validation",
    4: "Memory safety",
    5: "Schedule configuration",
    6: "JSON format",
    7: "Instruction semantics",
    8: "CUDA ABI",
    9: "Conformance",
}
"""Chapter titles of the spec, for the summary table."""


def _totals(run: KitRun) -> dict[str, int]:
    counts = Counter(r.status for r in run.results)
    return {
        "cases": len(run.results),
        "passed": counts[PASS],
        "failed": counts[FAIL],
        "not_applicable": counts[NA],
    }


def to_json(run: KitRun) -> dict[str, Any]:
    """The JSON report: implementation, spec version, per-rule status, per-case results, totals."""
    rules = {}
    for rr in run.rule_results():
        rule = RULES.get(rr.rule)
        rules[rr.rule] = {
            "level": rule.level.value if rule else "?",
            "section": rule.section if rule else "?",
            "status": rr.status,
            "cases": len(rr.cases),
            "failed_cases": list(rr.failed),
        }
    return {
        "implementation": {
            "command": run.command,
            **{k: run.implementation.get(k) for k in ("name", "version", "capabilities")},
        },
        "spec_version": IR_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "passed": run.passed,
        "totals": {**_totals(run), "seconds": round(run.seconds, 3), "restarts": run.restarts},
        "rules": rules,
        "cases": [
            {
                "id": r.case.id,
                "kind": r.case.kind,
                "rules": list(r.case.rules),
                "status": r.status,
                "reason": r.reason,
                "seconds": round(r.seconds, 4),
            }
            for r in run.results
        ],
    }


def to_junit(run: KitRun) -> str:
    """JUnit XML: one testsuite per case kind, one testcase per case (not applicable = skipped)."""
    root = ET.Element("testsuites", name="amkspec conformance", tests=str(len(run.results)))
    for kind in ("format", "validate", "run", "refuse"):
        results = [r for r in run.results if r.case.kind == kind]
        if not results:
            continue
        counts = Counter(r.status for r in results)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=kind,
            tests=str(len(results)),
            failures=str(counts[FAIL]),
            skipped=str(counts[NA]),
        )
        for r in results:
            tc = ET.SubElement(
                suite, "testcase", classname=f"conformance.{kind}", name=r.case.id, time=f"{r.seconds:.4f}"
            )
            if r.status == FAIL:
                ET.SubElement(tc, "failure", message=f"[{', '.join(r.case.rules)}] {r.reason}")
            elif r.status == NA:
                ET.SubElement(tc, "skipped", message=r.reason)
    return ET.tostring(root, encoding="unicode") + "\n"


def summary(run: KitRun) -> str:
    """The human summary: a table by chapter, then every failed rule with its first failing case."""
    impl = run.implementation
    lines = [
        f"implementation: {impl.get('name', '?')} {impl.get('version', '')} ({run.command})",
        f"spec {IR_VERSION}, protocol {PROTOCOL_VERSION}; {len(run.results)} cases in "
        f"{run.seconds:.1f} s, {run.restarts} restart(s)",
        "",
    ]
    rule_results = run.rule_results()
    header = (
        f"{'chapter':32} {'rules':>5} {'passed':>6} {'failed':>6} {'n/a':>5} {'untested':>8} {'outside':>7}"
    )
    lines += [header, "-" * len(header)]
    for chapter, title in CHAPTERS.items():
        mine = [rr for rr in rule_results if rr.rule in RULES and RULES[rr.rule].chapter == chapter]
        if not mine:
            continue
        c = Counter(rr.status for rr in mine)
        lines.append(
            f"{f'§{chapter} {title}':32} {len(mine):>5} {c[PASS]:>6} {c[FAIL]:>6} {c[NA]:>5} "
            f"{c[UNTESTED]:>8} {c[OUTSIDE]:>7}"
        )
    totals = _totals(run)
    lines += [
        "",
        f"cases: {totals['passed']} passed, {totals['failed']} failed, "
        f"{totals['not_applicable']} not applicable",
    ]
    reasons = {r.case.id: r.reason for r in run.results}
    failed = [rr for rr in rule_results if rr.status == FAIL]
    if failed:
        lines += ["", "failed rules:"]
        for rr in failed:
            level = RULES[rr.rule].level.value if rr.rule in RULES else "?"
            first = rr.failed[0]
            example = f"e.g. {first}: {_short(reasons[first])}"
            lines.append(f"  {rr.rule} ({level}): {len(rr.failed)} case(s) failed; {example}")
    lines += ["", "CONFORMS" if run.passed else "DOES NOT CONFORM"]
    return "\n".join(lines) + "\n"


def _short(reason: str, limit: int = 240) -> str:
    """The first line of a reason, at most ``limit`` characters (the JSON report keeps it whole)."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    return first if len(first) <= limit and first == reason.strip() else first[: limit - 1] + "…"


def dumps(run: KitRun) -> str:
    """The JSON report as text."""
    return json.dumps(to_json(run), indent=2) + "\n"
