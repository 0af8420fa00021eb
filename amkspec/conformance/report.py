"""Conformance reports: JSON, JUnit XML and a human summary by chapter and level (spec §9.6).

Every report shows both levels' verdicts — ``core`` (the specification) and ``strict`` (amkspec's
profile) — per rule and per chapter; the run's own :attr:`~amkspec.conformance.kit.KitRun.level`
decides the overall verdict and the exit status.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from amkspec.conformance.judge import FAIL, NA, PASS
from amkspec.conformance.kit import OUTSIDE, UNTESTED, KitRun, RuleResult, binds, finding_level
from amkspec.conformance.protocol import PROTOCOL_VERSION
from amkspec.conformance.rules import LEVELS, RULES, Level
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


def verdict_word(passed: bool) -> str:
    return "CONFORMS" if passed else "DOES NOT CONFORM"


def _totals(run: KitRun) -> dict[str, int]:
    counts = Counter(r.status for r in run.results)
    return {
        "cases": len(run.results),
        "passed": counts[PASS],
        "failed": counts[FAIL],
        "not_applicable": counts[NA],
    }


def chapter_counts(rule_results: list[RuleResult]) -> dict[int, Counter[str]]:
    """Per chapter, how many rules have each status (plus ``rules``, how many in all)."""
    table: dict[int, Counter[str]] = {}
    for rr in rule_results:
        counts = table.setdefault(RULES[rr.rule].chapter, Counter())
        counts[rr.status] += 1
        counts["rules"] += 1
    return table


def to_json(run: KitRun) -> dict[str, Any]:
    """The JSON report: implementation, spec version, both levels' verdicts, per-rule status at each
    level, per-case results with their findings, totals."""
    by_level = {level: {rr.rule: rr for rr in run.rule_results(level)} for level in LEVELS}
    rules = {}
    for rid, rule in RULES.items():
        mine = [by_level[lv][rid] for lv in LEVELS if rid in by_level[lv]]
        rules[rid] = {
            "keyword": rule.keyword.value,
            "level": rule.level.value,
            "section": rule.section,
            "status": {lv.value: by_level[lv][rid].status for lv in LEVELS if rid in by_level[lv]},
            "cases": len(mine[0].cases),
            "failed_cases": list(mine[-1].failed),
        }
    return {
        "implementation": {
            "command": run.command,
            **{k: run.implementation.get(k) for k in ("name", "version", "capabilities")},
        },
        "spec_version": IR_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "level": run.level.value,
        "passed": run.passed,
        "levels": {
            lv.value: {
                "passed": run.passed_at(lv),
                "failed_cases": [r.case.id for r in run.results if r.fails_at(lv)],
            }
            for lv in LEVELS
        },
        "totals": {**_totals(run), "seconds": round(run.seconds, 3), "restarts": run.restarts},
        "rules": rules,
        "cases": [
            {
                "id": r.case.id,
                "kind": r.case.kind,
                "rules": list(r.case.rules),
                "status": r.status,
                "reason": r.reason,
                "findings": [
                    {
                        "rules": list(f.rules),
                        "level": finding_level(f).value,
                        "binding": binds(f, Level.STRICT),
                        "message": f.message,
                    }
                    for f in r.findings
                ],
                "seconds": round(r.seconds, 4),
            }
            for r in run.results
        ],
    }


def to_junit(run: KitRun) -> str:
    """JUnit XML: one testsuite per case kind, one testcase per case. A case that fails certification
    at the run's level is a failure, a not-applicable one is skipped; findings that do not fail it
    (SHOULD rules, or strict rules at ``core``) are kept in its ``system-out``."""
    name = f"amkspec conformance ({run.level.value})"
    root = ET.Element("testsuites", name=name, tests=str(len(run.results)))
    for kind in ("format", "validate", "run", "refuse"):
        results = [r for r in run.results if r.case.kind == kind]
        if not results:
            continue
        suite = ET.SubElement(
            root,
            "testsuite",
            name=kind,
            tests=str(len(results)),
            failures=str(sum(r.fails_at(run.level) for r in results)),
            skipped=str(sum(r.status == NA for r in results)),
        )
        for r in results:
            tc = ET.SubElement(
                suite, "testcase", classname=f"conformance.{kind}", name=r.case.id, time=f"{r.seconds:.4f}"
            )
            failing = [f for f in r.findings if binds(f, run.level)]
            if failing:
                ET.SubElement(tc, "failure", message=f"[{', '.join(failing[0].rules)}] {failing[0].message}")
            elif r.status == NA:
                ET.SubElement(tc, "skipped", message=r.reason)
            others = [f for f in r.findings if f not in failing]
            if others:
                out = ET.SubElement(tc, "system-out")
                out.text = "\n".join(f"[{', '.join(f.rules)}] {f.message}" for f in others)
    return ET.tostring(root, encoding="unicode") + "\n"


def summary(run: KitRun) -> str:
    """The human summary: a table by chapter with both levels, every failed rule with its first failing
    case, and the verdicts."""
    impl = run.implementation
    lines = [
        f"implementation: {impl.get('name', '?')} {impl.get('version', '')} ({run.command})",
        f"spec {IR_VERSION}, protocol {PROTOCOL_VERSION}; {len(run.results)} cases in "
        f"{run.seconds:.1f} s, {run.restarts} restart(s)",
        "",
    ]
    counts = {lv: chapter_counts(run.rule_results(lv)) for lv in LEVELS}
    header = f"{'':32} {'core (the spec)':^22}   {'strict (amkspec)':^22}"
    columns = f"{'chapter':32} " + "   ".join([f"{'rules':>5} {'pass':>5} {'fail':>5} {'n/a':>4}"] * 2)
    lines += [header, columns, "-" * len(columns)]
    for chapter, title in CHAPTERS.items():
        if chapter not in counts[Level.STRICT]:
            continue
        cells = []
        for lv in LEVELS:
            c = counts[lv].get(chapter, Counter())
            other = c[NA] + c[UNTESTED] + c[OUTSIDE]
            cells.append(f"{c['rules']:>5} {c[PASS]:>5} {c[FAIL]:>5} {other:>4}")
        lines.append(f"{f'§{chapter} {title}':32} " + "   ".join(cells))
    totals = _totals(run)
    lines += [
        "(n/a: not applicable, untested, or outside the kit)",
        "",
        f"cases: {totals['passed']} passed, {totals['failed']} with findings, "
        f"{totals['not_applicable']} not applicable",
    ]
    lines += _failed_rules(run)
    lines += [""] + [
        f"{lv.value}: {verdict_word(run.passed_at(lv))} "
        f"({sum(r.fails_at(lv) for r in run.results)} case(s) fail it)"
        for lv in LEVELS
    ]
    lines += [f"verdict at level {run.level.value}: {verdict_word(run.passed)}"]
    return "\n".join(lines) + "\n"


def _failed_rules(run: KitRun) -> list[str]:
    """One line per rule with a finding, at the first level where it has one."""
    reasons = {r.case.id: r for r in run.results}
    out: list[str] = []
    for rr in run.rule_results(Level.STRICT):
        if rr.status != FAIL:
            continue
        rule = RULES[rr.rule]
        first = reasons[rr.failed[0]]
        message = next((f.message for f in first.findings if rr.rule in f.rules), first.reason)
        note = "" if rule.keyword.value == "MUST" else "; reported, never fails certification"
        out.append(
            f"  {rr.rule} ({rule.keyword.value}, {rule.level.value}{note}): {len(rr.failed)} case(s); "
            f"e.g. {first.case.id}: {_short(message)}"
        )
    return ["", "rules with findings:", *out] if out else []


def _short(reason: str, limit: int = 200) -> str:
    """The first line of a reason, at most ``limit`` characters (the JSON report keeps it whole)."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    return first if len(first) <= limit and first == reason.strip() else first[: limit - 1] + "…"


def dumps(run: KitRun) -> str:
    """The JSON report as text."""
    return json.dumps(to_json(run), indent=2) + "\n"
