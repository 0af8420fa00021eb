"""Every requirement of the spec is an identified rule (spec §9.1): each sentence of a spec chapter
that uses an RFC 2119 key word cites an existing rule ID, each rule is rendered (anchored) in
exactly one rules block of its chapter, and each rule left to amkspec's own tests names tests that
exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amkspec.conformance.normative import requirements, uncited_requirements
from amkspec.conformance.rules import RULES, Level, rules_in, untraced_musts

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "docs" / "spec").glob("*.md"))
RULES_BLOCK = re.compile(r"^```\{amkspec-rules\} (§[\d.]+)\s*$", re.MULTILINE)


def test_every_requirement_sentence_of_the_spec_cites_a_rule() -> None:
    problems = [
        f"{path.name}:{req.line}: {why}: {req.text}"
        for path in CHAPTERS
        for req, why in uncited_requirements(path.read_text(encoding="utf-8"))
    ]
    assert problems == []
    found = [req for path in CHAPTERS for req in requirements(path.read_text(encoding="utf-8"))]
    assert len(found) >= 35  # the scan sees the chapters' requirement sentences


def test_every_must_sentence_cites_a_must_rule() -> None:
    """A MUST sentence cites at least one MUST rule (a SHOULD rule cannot state a MUST)."""
    weak = [
        f"{path.name}:{req.line}: {req.text}"
        for path in CHAPTERS
        for req in requirements(path.read_text(encoding="utf-8"))
        if "MUST" in req.keywords and not any(RULES[r].level is Level.MUST for r in req.cited)
    ]
    assert weak == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("A VM MUST refuse it.", "cites no rule ID"),
        ("A VM MUST refuse it\n(`VAL-RACE-99`).", "unknown rule(s) VAL-RACE-99"),
        ("- `source` is a name; it SHOULD\n  be null.", "cites no rule ID"),
        ("Fine (`FMT-RT-1`). Then a reader MAY warn, e.g. once.", "cites no rule ID"),
        ("| a | table row that MUST hold |", "cites no rule ID"),
    ],
)
def test_the_scan_flags_an_uncited_or_unknown_requirement(text: str, problem: str) -> None:
    [(_, why)] = uncited_requirements(text)
    assert problem in why


@pytest.mark.parametrize(
    "text",
    [
        "A VM MUST refuse it (`EXEC-REFUSE-1`).",
        "A reader MUST refuse\nit (`FMT-JSON-1`,\n`FMT-REQ-1`).",
        "The key words `MUST` and `MAY` are normative.",
        "```text\nA VM MUST refuse it.\n```",
        "# A heading that says MUST\n",
        "lower-case must, should and may are prose.",
    ],
)
def test_the_scan_accepts_cited_requirements_mentions_code_and_headings(text: str) -> None:
    assert uncited_requirements(text) == []


def test_every_rule_is_rendered_in_exactly_one_rules_block_of_its_chapter() -> None:
    rendered: dict[str, list[str]] = {rid: [] for rid in RULES}
    for path in CHAPTERS:
        for where in RULES_BLOCK.findall(path.read_text(encoding="utf-8")):
            assert path.name.startswith(f"{int(where.lstrip('§').split('.')[0]):02d}-"), (path.name, where)
            for rule in rules_in(where):
                rendered[rule.id].append(f"{path.name} {where}")
    assert {rid: where for rid, where in rendered.items() if len(where) != 1} == {}


def test_rules_left_to_amkspecs_own_tests_name_tests_that_exist() -> None:
    left = [r for r in RULES.values() if r.verified_by]
    assert {r.id for r in left} >= {"LOWER-CFG-1", "LOWER-FUSE-1", "EXEC-COOP-1", "DATA-ENUM-1"}
    for rule in left:
        assert rule.level is Level.MUST, rule.id
        for node in rule.verified_by:
            path, _, name = node.partition("::")
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), node
    exempt = {r.id for r in RULES.values() if r.every_case or r.verified_by}
    musts = [r.id for r in RULES.values() if r.level is Level.MUST]
    assert untraced_musts(set()) == [rid for rid in musts if rid not in exempt]
