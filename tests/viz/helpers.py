"""Shared helpers of the picture tests: explained gallery examples and reading SVG by element id."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import cache
from typing import Any

from amkspec.ir import MegakernelProgram
from amkspec.programs.gallery import EXAMPLES
from amkspec.smt.explain import explain

SVG = "{http://www.w3.org/2000/svg}"


@cache
def explained(title: str) -> tuple[MegakernelProgram, dict[str, Any]]:
    """A gallery example and the first witnessed finding of ``explain`` (JSON form)."""
    prog = EXAMPLES[title]()
    result = explain(prog).to_dict(prog)
    return prog, next(f for f in result["findings"] if f["witness"])


def parse_svg(text: str) -> ET.Element:
    """The root of an SVG document (raises on malformed XML)."""
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    return root


def ids(root: ET.Element) -> set[str]:
    """Every element id in a parsed SVG or XHTML tree."""
    return {e.attrib["id"] for e in root.iter() if "id" in e.attrib}


def texts(root: ET.Element) -> str:
    """All text of the tree, joined (matplotlib writes text as <text> with svg.fonttype = none)."""
    return " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))


def element(root: ET.Element, element_id: str) -> ET.Element:
    """The element with this id."""
    found = [e for e in root.iter() if e.attrib.get("id") == element_id]
    assert len(found) == 1, f"{element_id}: {len(found)} elements"
    return found[0]
