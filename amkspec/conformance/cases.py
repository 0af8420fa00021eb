"""Conformance cases: language-neutral JSON files, one behaviour each (spec §9.2).

Every case has ``kind`` (``format``, ``validate``, ``run`` or ``refuse``; a file without one is a
``validate`` case), ``description``, ``rules`` (the rule IDs it tests) and a kind-specific body
(see the §9 chapter). ``requires`` lists the capabilities it needs; by default ``load`` for
format cases, ``validate`` for validate cases and ``run`` for run and refuse cases.
Files under a ``data/`` folder are not cases (they hold programs and ``.npy`` tensors).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

KINDS = ("format", "validate", "run", "refuse")
DEFAULT_REQUIRES = {"format": ["load"], "validate": ["validate"], "run": ["run"], "refuse": ["run"]}


class CaseError(ValueError):
    """A case file is not a well-formed case."""


@attrs.frozen
class Case:
    """One case: its id (path below the cases folder, without ``.json``), kind, rules and body."""

    id: str
    path: Path
    kind: str
    description: str
    rules: tuple[str, ...]
    requires: tuple[str, ...]
    body: dict[str, Any]

    @property
    def base(self) -> Path:
        """The folder relative paths in the case are taken from."""
        return self.path.parent


def default_cases_dir() -> Path:
    """``corpus/cases`` of the source tree amkspec runs from."""
    return Path(__file__).resolve().parents[2] / "corpus" / "cases"


def program_text(body: dict[str, Any], base: Path) -> str:
    """A case's program as document text: ``program_file`` verbatim, or ``program`` canonically."""
    if "program_file" in body:
        return (base / body["program_file"]).read_text(encoding="utf-8")
    return json.dumps(body["program"], indent=2)


def load_case(path: Path, root: Path) -> Case:
    """Read one case file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaseError(f"{path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise CaseError(f"{path}: not a JSON object")
    kind = doc.get("kind", "validate")
    if kind not in KINDS:
        raise CaseError(f"{path}: unknown kind {kind!r}")
    rules = doc.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise CaseError(f"{path}: rules must be a list of rule IDs")
    problem = _body_problem(kind, doc)
    if problem:
        raise CaseError(f"{path}: a {kind} case {problem}")
    case_id = str(path.relative_to(root).with_suffix("")).replace("\\", "/")
    return Case(
        case_id,
        path,
        kind,
        str(doc.get("description", "")),
        tuple(rules),
        tuple(doc.get("requires", DEFAULT_REQUIRES[kind])),
        doc,
    )


def _body_problem(kind: str, doc: dict[str, Any]) -> str:
    """Why ``doc`` lacks what a ``kind`` case needs ('' when it has it), so that a malformed case
    is never blamed on the implementation judged with it."""
    expect = doc.get("expect")
    if kind == "run":
        steps = doc.get("steps")
        if not isinstance(doc.get("weights"), dict) or not isinstance(doc.get("tolerance"), dict):
            return "needs weights and tolerance objects"
        if not isinstance(steps, list) or not steps:
            return "needs a non-empty list of steps"
        for n, step in enumerate(steps):
            if not isinstance(step, dict) or not _has_program(step):
                return f"needs a program or program_file in step {n}"
            expect = step.get("expect")
            if not isinstance(expect, dict) or not isinstance(expect.get("outputs"), dict):
                return f"needs expect.outputs in step {n}"
        return ""
    if not isinstance(expect, dict):
        return "needs an expect object"
    if kind == "format":
        if not isinstance(doc.get("document"), str):
            return "needs a document string"
        if expect.get("outcome") == "refused":
            return "" if isinstance(expect.get("error_class"), str) else "needs expect.error_class"
        return "" if expect.get("outcome") == "loaded" else "needs expect.outcome loaded or refused"
    if not _has_program(doc):
        return "needs a program or program_file"
    if kind == "validate":
        return "" if isinstance(expect.get("verdict"), str) else "needs expect.verdict"
    if not isinstance(doc.get("weights"), dict):
        return "needs a weights object"
    return "" if expect.get("outcome") in ("refused", "ran") else "needs expect.outcome refused or ran"


def _has_program(body: dict[str, Any]) -> bool:
    return isinstance(body.get("program"), dict) or isinstance(body.get("program_file"), str)


def discover(root: Path, select: str | None = None) -> list[Case]:
    """Every case under ``root`` (sorted by id); ``select`` keeps ids containing that text."""
    paths = sorted(p for p in root.rglob("*.json") if "data" not in p.relative_to(root).parts)
    cases = [load_case(p, root) for p in paths]
    return [c for c in cases if select is None or select in c.id]
