"""One clause-numbering scheme: the site's (spec chapter headings in ``docs/spec``).

Every ``§N`` or ``§N.M`` cited in the package, the conformance kit and the docs names a heading
that exists on the site, every rule ID the docs cite is a rule, and the validator's report groups
findings under the site's own sections of chapter 3 with the site's own titles.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amkspec.conformance.rules import RULES
from amkspec.proofs.diagnostics import CODES, FAMILY_SECTION, Family
from amkspec.proofs.result import SECTION_TITLES
from amkspec.proofs.validate import validate
from corpus import make_cases

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^#{1,3} (\d+(?:\.\d+)?)\.? (.+)$", re.MULTILINE)
CITATION = re.compile(r"(?:§|\\u00a7)(\d+(?:\.\d+)*)")
RULE_ID = re.compile(r"`([A-Z]{2,}(?:-[A-Z]+)+-\d+)`")
CITING = ("amkspec", "vm_cuda", "corpus", "docs")
SUFFIXES = {".py", ".md", ".json", ".txt", ".rst", ".h", ".cuh", ".cu", ".cpp"}


def site_headings() -> dict[str, str]:
    """Section number → heading title, for every numbered heading of the spec chapters."""
    found: dict[str, str] = {}
    for chapter in sorted((ROOT / "docs" / "spec").glob("*.md")):
        for number, title in HEADING.findall(chapter.read_text(encoding="utf-8")):
            found[number] = title.strip()
    return found


def citing_files() -> list[Path]:
    files = []
    for top in CITING:
        for path in sorted((ROOT / top).rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if path.suffix in SUFFIXES and path.is_file() and not parts & {"_build", "__pycache__"}:
                files.append(path)
    return files


def test_the_site_numbers_its_chapters_and_sections() -> None:
    headings = site_headings()
    assert [str(n) for n in range(1, 10)] == [k for k in headings if "." not in k]
    assert headings["3.3"] == "Race-freedom" and headings["9.3"] == "The harness protocol"


def test_every_cited_section_is_a_heading_on_the_site() -> None:
    headings = site_headings()
    missing = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}: §{m.group(1)}"
        for path in citing_files()
        for text in [path.read_text(encoding="utf-8")]
        for m in CITATION.finditer(text)
        if m.group(1) not in headings
    ]
    assert not missing, "cited sections the site does not have:\n" + "\n".join(missing)


def test_every_rule_id_the_docs_cite_is_a_rule() -> None:
    cited = {
        (path.relative_to(ROOT).as_posix(), rid)
        for path in citing_files()
        if path.suffix == ".md"
        for rid in RULE_ID.findall(path.read_text(encoding="utf-8"))
    }
    assert ("docs/spec/01-data-model.md", "VAL-STRUCT-3") in cited
    assert sorted((where, rid) for where, rid in cited if rid not in RULES) == []


def test_the_citation_scan_sees_code_docs_and_cases() -> None:
    scanned = {p.relative_to(ROOT).as_posix() for p in citing_files()}
    assert {"amkspec/proofs/diagnostics.py", "docs/spec/03-validation.md"} <= scanned
    assert any(p.startswith("corpus/cases/races/") for p in scanned)


@pytest.mark.parametrize("family", list(Family))
def test_each_family_cites_the_site_section_that_states_its_rules(family: Family) -> None:
    headings = site_headings()
    number = family.section.lstrip("§")
    assert headings[number].lower() == family.title == SECTION_TITLES[family.section]
    text = (ROOT / "docs" / "spec" / "03-validation.md").read_text(encoding="utf-8")
    body = text.split(f"## {number} ")[1].split("\n## ")[0]
    assert f"{{amkspec-rules}} {family.section}" in body
    for info in CODES.values():
        if info.family is family:
            assert info.clause == family.section


def test_every_code_is_described_in_its_own_section() -> None:
    text = (ROOT / "docs" / "spec" / "03-validation.md").read_text(encoding="utf-8")
    sections = {f"§{m.group(1)}": m.start() for m in re.finditer(r"^## (3\.\d) ", text, re.MULTILINE)}
    starts = [*sorted(sections.values()), len(text)]
    for info in CODES.values():
        if info.family is Family.MEMORY:
            continue  # §3.4 states the family; chapter 4 tabulates its codes one by one
        start = sections[info.clause]
        body = text[start : starts[starts.index(start) + 1]]
        assert f"`{info.code}`" in body, f"{info.code} is not described in {info.clause}"


def test_the_report_groups_findings_under_the_sites_sections() -> None:
    prog = make_cases.base_program()
    prog.counters[0].init = 1  # S103, structure
    prog.tasks[3].waits[1].threshold = 1  # R301, races
    prog.meta["gpu"] = "a100"  # O502, outputs
    result = validate(prog)
    assert list(result.by_section()) == ["§3.1", "§3.3", "§3.5"]
    headers = [line for line in result.report().splitlines()[1:] if not line.startswith(" ")]
    headings = site_headings()
    assert headers == [f"§{n} {headings[n].lower()}" for n in ("3.1", "3.3", "3.5")]
    assert [d["clause"] for d in result.to_dict()["diagnostics"]] == ["§3.1", "§3.3", "§3.5"]
    assert dict(FAMILY_SECTION.values()) == SECTION_TITLES
