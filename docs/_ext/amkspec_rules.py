"""Sphinx directives for the normative rules (spec §9.1), rendered from
:data:`amkspec.conformance.rules.RULES` — the one place a rule is defined.

``{amkspec-rules} §6`` (or ``§3.3``) lists the rules of a chapter or section, each with an anchor
``rule-<id>`` (lower case) so that ``spec/06-json-format.html#rule-fmt-rt-1`` is a stable link.

``{amkspec-traceability}`` renders the table rule → diagnostic code(s) → conformance cases and
**fails the build** when a MUST rule has no case (rules every case exercises excepted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.errors import ExtensionError

from amkspec.conformance.cases import discover
from amkspec.conformance.rules import RULES, Rule, untraced_musts

CASES_DIR = Path(__file__).resolve().parents[2] / "conformance" / "cases"


def anchor(rule_id: str) -> str:
    """The HTML anchor of a rule."""
    return "rule-" + rule_id.lower()


def _in(rule: Rule, where: str) -> bool:
    return (
        rule.section == where
        or rule.section.startswith(where.rstrip(".") + ".")
        or ("." not in where and rule.chapter == int(where.lstrip("§")))
    )


def cases_by_rule() -> dict[str, list[str]]:
    """Rule ID → the ids of the cases that cite it."""
    table: dict[str, list[str]] = {rid: [] for rid in RULES}
    for case in discover(CASES_DIR):
        for rid in case.rules:
            table.setdefault(rid, []).append(case.id)
    return table


class RulesDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        chosen = [r for r in RULES.values() if _in(r, self.arguments[0])]
        if not chosen:
            raise ExtensionError(f"amkspec-rules: no rule in {self.arguments[0]}")
        items = nodes.bullet_list(classes=["amkspec-rules"])
        for rule in chosen:
            para = nodes.paragraph()
            para += nodes.target("", "", ids=[anchor(rule.id)])
            para += nodes.strong(text=rule.id)
            para += nodes.Text(f" ({rule.level.value}). {rule.text}")
            if rule.codes:
                para += nodes.Text(" Codes: ")
                para += nodes.literal(text=", ".join(rule.codes))
                para += nodes.Text(".")
            items += nodes.list_item("", para)
        return [items]


class TraceabilityDirective(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        cases = cases_by_rule()
        missing = untraced_musts({rid for rid, ids in cases.items() if ids})
        if missing:
            raise ExtensionError(f"MUST rule(s) without a conformance case: {', '.join(missing)}")
        headers = ["Rule", "Level", "Section", "Codes", "Cases"]
        rows = []
        for rule in RULES.values():
            ids = cases.get(rule.id, [])
            shown = (
                "every case"
                if rule.every_case and not ids
                else (", ".join(ids[:3]) + (f" … ({len(ids)} in all)" if len(ids) > 3 else ""))
            )
            rows.append([rule.id, rule.level.value, rule.section, ", ".join(rule.codes), shown])
        return [_table(headers, rows)]


def _table(headers: list[str], rows: list[list[str]]) -> nodes.table:
    table = nodes.table(classes=["amkspec-generated"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in headers)
    head = nodes.thead()
    head += _row(headers)
    body = nodes.tbody()
    body.extend(_row(r) for r in rows)
    group += head
    group += body
    return table


def _row(cells: list[str]) -> nodes.row:
    row = nodes.row()
    for text in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=text)
        row += entry
    return row


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("amkspec-rules", RulesDirective)
    app.add_directive("amkspec-traceability", TraceabilityDirective)
    return {"parallel_read_safe": True, "version": "1"}
