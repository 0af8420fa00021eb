"""Every requirement of the spec is an identified rule (spec §9.1): each sentence of a spec chapter
that uses an RFC 2119 key word cites an existing rule ID, each rule is rendered (anchored) in
exactly one rules block of its chapter, each rule left to amkspec's own tests names tests that
exist, and each strict rule names a Differences entry that exists."""

from __future__ import annotations

import re

import pytest

from amkspec.conformance.normative import requirements, uncited_requirements
from amkspec.conformance.rules import RETIRED, RULES, Keyword, Level, rules_in, untraced_musts
from tests.conftest import ROOT

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
        if "MUST" in req.keywords and not any(RULES[r].keyword is Keyword.MUST for r in req.cited)
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
        assert rule.keyword is Keyword.MUST, rule.id
        for node in rule.verified_by:
            path, _, name = node.partition("::")
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), node
    exempt = {r.id for r in RULES.values() if r.every_case or r.verified_by}
    musts = [r.id for r in RULES.values() if r.keyword is Keyword.MUST]
    assert untraced_musts(set()) == [rid for rid in musts if rid not in exempt]


def test_every_strict_rule_names_a_differences_entry_that_exists_and_core_rules_none() -> None:
    strict = [r for r in RULES.values() if r.level is Level.STRICT]
    assert {"FMT-DUP-1", "FMT-UNK-2", "VAL-STRUCT-17", "VAL-MEM-20", "VAL-CODE-1"} <= {r.id for r in strict}
    for rule in RULES.values():
        assert (rule.differs is not None) == (rule.level is Level.STRICT), rule.id
    sections = _sections()
    for rule in strict:
        assert rule.differs is not None
        rows = sections.get((rule.differs.doc, rule.differs.anchor), [])
        assert any(row.startswith(f"| {rule.differs.area} |") for row in rows), (rule.id, rule.differs)


def _sections() -> dict[tuple[str, str], list[str]]:
    """(document, heading anchor) → the lines of that section, for the Differences page (with the
    files it includes) and the spec chapters; anchors are MyST's (lower case, punctuation dropped,
    spaces as hyphens)."""
    sources = {"differences": sorted((ROOT / "docs" / "differences").glob("*.md"))}
    sources |= {f"spec/{p.stem}": [p] for p in CHAPTERS}
    found: dict[tuple[str, str], list[str]] = {}
    for doc, paths in sources.items():
        lines: list[str] = []
        for path in paths:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith("#"):
                    title = line.lstrip("#").strip().lower()
                    lines = found.setdefault((doc, re.sub(r"[^\w\- ]", "", title).replace(" ", "-")), [])
                lines.append(line)
    return found


def test_the_core_level_is_the_original_specification() -> None:
    """Spot checks of the level table against the specification's own text: its checklist (§9 of the
    original: both invariants, counter firing, the JSON round trip, the opcode numerics) is core;
    amkspec's memory-safety family and its vocabulary are strict."""
    core = {"VAL-DEAD-5", "VAL-RACE-1", "VAL-RACE-3", "VAL-RACE-5", "VAL-STRUCT-3", "VAL-STRUCT-7",
            "EXEC-FIRE-1", "EXEC-REFUSE-1", "EXEC-REFUSE-2", "FMT-RT-1", "FMT-UNK-1", "FMT-VER-1",
            "OP-DEQUANT-1", "OP-COPY-1"}
    assert {rid for rid in core if RULES[rid].level is not Level.CORE} == set()
    assert all(RULES[rid].level is Level.STRICT for rid in RULES if rid.startswith("VAL-MEM-"))
    assert Level.STRICT.includes(Level.CORE) and not Level.CORE.includes(Level.STRICT)


def test_a_retired_rule_id_is_never_reused() -> None:
    assert set(RETIRED) and not set(RETIRED) & set(RULES)
