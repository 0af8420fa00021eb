"""Rejected schedules as counterexamples: one file set per distinct rejection (spec §3, ``explain``).

A rejection's *key* names what was wrong: the codes and knob paths of a config the knob checks
refused (``knob:range@tiling.gemv.N_tile``, ``O504@smem_bytes_per_block``), or the validator's
codes for a lowered program it rejected. For each new key :func:`write_rejection` writes
``<key>.json`` (the config, the codes, every finding); for a program rejection also
``<key>.program.json`` (re-run ``amkspec explain`` on it) and, for each finding Z3 witnessed and
the replay checker confirmed, ``<key>.<n>.dot`` (the bad execution as a Graphviz graph).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from amkspec.ir import MegakernelProgram, ScheduleConfig, dumps
from amkspec.lower import knobs
from amkspec.proofs import Diagnostic
from amkspec.search.files import atomic_write

MAX_KEY = 80


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.@+-]+", "_", text)
    if len(slug) > MAX_KEY:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        slug = slug[: MAX_KEY - 11] + "-" + digest
    return slug


def _config_doc(config: Any) -> Any:
    parsed = config if isinstance(config, ScheduleConfig) else None
    return knobs.config_dict(parsed) if parsed is not None else knobs.canonical(knobs.as_document(config))


@attrs.frozen
class Rejection:
    """One rejection: its key, codes, the document to write and the rejected program (if any)."""

    key: str
    codes: tuple[str, ...]
    document: dict[str, Any]
    program: MegakernelProgram | None = None
    diagnostics: tuple[Diagnostic, ...] = ()

    @classmethod
    def from_issues(cls, sid: str, config: Any, issues: Sequence[knobs.KnobIssue]) -> Rejection:
        """A config the knob checks refused (no program exists: every finding is rule-only)."""
        parts = sorted({f"{i.code}@{i.path.split('.')[0] if i.path.startswith('sm_assignment') else i.path}"
                        for i in issues})
        codes = tuple(dict.fromkeys(i.code for i in issues))
        findings = [{**i.to_dict(), "status": "rule-only"} for i in issues]
        doc = {"schedule_id": sid, "stage": "knob checks (before lowering)", "codes": list(codes),
               "config": _config_doc(config), "findings": findings}
        return cls(_slug("+".join(parts)), codes, doc)

    @classmethod
    def from_program(cls, sid: str, config: ScheduleConfig, prog: MegakernelProgram,
                     errors: Sequence[Diagnostic]) -> Rejection:
        """A lowered program :func:`amkspec.validate` rejected."""
        codes = tuple(dict.fromkeys(d.code for d in errors))
        doc = {"schedule_id": sid, "stage": "validate() of the lowered program", "codes": list(codes),
               "config": knobs.config_dict(config)}
        return cls(_slug("+".join(sorted(codes))), codes, doc, prog, tuple(errors))


def _explained(rej: Rejection, stem: Path) -> dict[str, Any]:
    """The findings of ``explain`` on the program, writing one DOT file per replayed witness."""
    prog = rej.program
    assert prog is not None
    try:
        from amkspec.smt.explain import explain
        from amkspec.smt.witness import render_dot

        explanation = explain(prog)
    except Exception as exc:  # noqa: BLE001 - no z3, or the solver gave up: keep the validator's findings
        findings = [{**d.to_dict(), "status": "rule-only"} for d in rej.diagnostics]
        return {"findings": findings, "note": f"explain unavailable ({type(exc).__name__})"}
    dots = []
    for n, finding in enumerate(f for f in explanation.findings if f.witness is not None):
        dot = stem.with_name(f"{stem.name}.{n}.dot")
        atomic_write(dot, render_dot(prog, finding.witness))  # type: ignore[arg-type]
        dots.append(dot.name)
    return {**explanation.to_dict(prog), "dot": dots}


def write_rejection(directory: Path, rej: Rejection) -> str:
    """Write the counterexample of ``rej`` unless its key was written before; its JSON path."""
    stem = directory / rej.key
    path = stem.with_name(stem.name + ".json")
    if path.exists():
        return str(path)
    doc = dict(rej.document)
    if rej.program is not None:
        program_file = stem.with_name(stem.name + ".program.json")
        atomic_write(program_file, dumps(rej.program) + "\n")
        doc["program"] = program_file.name
        doc.update(_explained(rej, stem))
    atomic_write(path, json.dumps(doc, indent=2, ensure_ascii=True) + "\n")
    return str(path)
