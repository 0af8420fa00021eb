"""Sphinx directives for the normative rules (spec §9.1), rendered from
:data:`amkspec.conformance.rules.RULES` — the one place a rule is defined.

``{amkspec-rules} §6`` (or ``§3.3``) lists the rules of a chapter or section, each with an anchor
``rule-<id>`` (lower case) so that ``spec/06-json-format.html#rule-fmt-rt-1`` is a stable link.

Each entry shows the rule's key word and level; a strict rule links the Differences entry that gives
its reason.

``{amkspec-traceability}`` renders the table rule → key word, level → diagnostic code(s) →
conformance cases and **fails the build** when a MUST rule has no case (rules every case exercises,
and rules verified by amkspec's own tests because the protocol cannot drive their component,
excepted).

Every sentence of a spec chapter (``docs/spec/*.md``) that uses an RFC 2119 key word must cite the
ID of an existing rule (:mod:`amkspec.conformance.normative`); each one that does not is a warning
at its line, so ``sphinx -W`` fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.errors import ExtensionError
from sphinx.util import logging

from amkspec.conformance.cases import discover
from amkspec.conformance.normative import uncited_requirements
from amkspec.conformance.rules import RULES, Rule, rules_in, untraced_musts

LOGGER = logging.getLogger(__name__)

CASES_DIR = Path(__file__).resolve().parents[2] / "corpus" / "cases"


def anchor(rule_id: str) -> str:
    """The HTML anchor of a rule."""
    return "rule-" + rule_id.lower()


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
        chosen = rules_in(self.arguments[0])
        if not chosen:
            raise ExtensionError(f"amkspec-rules: no rule in {self.arguments[0]}")
        items = nodes.bullet_list(classes=["amkspec-rules"])
        env = self.state.document.settings.env
        for rule in chosen:
            items += nodes.list_item("", _entry(rule, env))
        return [items]


def _entry(rule: Rule, env: Any) -> nodes.paragraph:
    para = nodes.paragraph()
    para += nodes.target("", "", ids=[anchor(rule.id)])
    para += nodes.strong(text=rule.id)
    para += nodes.Text(f" ({rule.keyword.value}, {rule.level.value}). {rule.text}")
    if rule.differs is not None:
        para += nodes.Text(" Stricter than the original specification; why: ")
        para += _difference_link(rule, env)
        para += nodes.Text(".")
    if rule.codes:
        para += nodes.Text(" Codes: ")
        para += nodes.literal(text=", ".join(rule.codes))
        para += nodes.Text(".")
    if rule.verified_by:
        para += nodes.Text(" The protocol cannot drive this component, so the kit does not certify it; ")
        para += nodes.Text("amkspec's own tests verify it: ")
        para += nodes.literal(text=", ".join(rule.verified_by))
        para += nodes.Text(".")
    return para


def _difference_link(rule: Rule, env: Any) -> nodes.reference:
    """A link to the section of the site that gives a strict rule's reason, labelled with its row."""
    assert rule.differs is not None
    uri = env.app.builder.get_relative_uri(env.docname, rule.differs.doc) + "#" + rule.differs.anchor
    return nodes.reference("", rule.differs.area.replace("`", ""), refuri=uri, internal=True)


class TraceabilityDirective(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        cases = cases_by_rule()
        missing = untraced_musts({rid for rid, ids in cases.items() if ids})
        if missing:
            raise ExtensionError(f"MUST rule(s) without a conformance case: {', '.join(missing)}")
        headers = ["Rule", "Key word", "Level", "Section", "Codes", "Cases"]
        rows = []
        for rule in RULES.values():
            ids = cases.get(rule.id, [])
            shown = (
                "every case"
                if rule.every_case and not ids
                else "amkspec tests: " + ", ".join(t.rpartition("::")[2] for t in rule.verified_by)
                if rule.verified_by and not ids
                else (", ".join(ids[:3]) + (f" … ({len(ids)} in all)" if len(ids) > 3 else ""))
            )
            rows.append(
                [rule.id, rule.keyword.value, rule.level.value, rule.section, ", ".join(rule.codes), shown]
            )
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


def check_requirement_sentences(app: Any, docname: str, source: list[str]) -> None:
    """Warn (an error under ``-W``) at every RFC 2119 sentence of a spec chapter that names no rule."""
    if not docname.startswith("spec/"):
        return
    for requirement, problem in uncited_requirements(source[0]):
        where = (docname, requirement.line)
        LOGGER.warning("requirement sentence %s: %r", problem, requirement.text[:120], location=where)


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", check_requirement_sentences)
    app.add_directive("amkspec-rules", RulesDirective)
    app.add_directive("amkspec-traceability", TraceabilityDirective)
    return {"parallel_read_safe": True, "version": "1"}
