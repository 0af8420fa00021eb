"""Rejected schedules as counterexamples: one file set per distinct rejection (spec §3, ``explain``).

A rejection's *key* names what was wrong: the codes and knob paths of a config the knob checks
refused (``knob_range@tiling.gemv.N_tile``, ``O504@smem_bytes_per_block``), the validator's
codes for a lowered program it rejected (``R303``), or the exception a lowering raised
(``lowering@RuntimeError``). For each new key :func:`write_rejection` writes ``<key>.json`` (the
config, the codes, every finding, or the lowering's error); for a program rejection also
``<key>.program.json`` (re-run ``amkspec explain`` on it) and, for each finding Z3 witnessed and
the replay checker confirmed, ``<key>.<n>.dot`` (the bad execution as a Graphviz graph).

Keys are file names, one per distinct rejection: a knob path (which a config may spell any way)
is kept as written only when it is made of ``[A-Za-z0-9_.-]``; otherwise its other characters
become ``_`` and ``~`` plus a hash of the path as written follows, and so does a key longer than
:data:`MAX_KEY`. ``~`` appears in no path kept as written, so two distinct rejections never share a
file (``a b`` and ``a/b`` are ``a_b~<hash>`` and ``a_b~<other hash>``).
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
from amkspec.proofs import Diagnostic, Severity, ValidationResult
from amkspec.search.files import atomic_write

MAX_KEY = 80
"""The longest key (file name stem) written as it is; a longer one is cut and hashed."""
PLAIN = re.compile(r"[A-Za-z0-9_.-]+")
"""A knob path (or exception name) made only of these is its own file name."""
DIGEST = 10


def _digest(text: str) -> str:
    return "~" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST]


def _name(text: str) -> str:
    """``text`` if it is :data:`PLAIN`, else its plain characters and ``~`` + its hash (injective)."""
    if PLAIN.fullmatch(text):
        return text
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:MAX_KEY] + _digest(text)


def _key(parts: Sequence[str]) -> str:
    """The file name stem of a rejection made of ``parts`` (``code@name``), cut and hashed if long."""
    key = "+".join(sorted(set(parts)))
    return key if len(key) <= MAX_KEY else key[: MAX_KEY - DIGEST - 1] + _digest(key)


def _code(code: str) -> str:
    """A diagnostic code in a file name (``knob:range`` → ``knob_range``; codes hold no ``_``)."""
    return code.replace(":", "_")


def _config_doc(config: Any) -> Any:
    parsed = config if isinstance(config, ScheduleConfig) else None
    return knobs.config_dict(parsed) if parsed is not None else knobs.canonical(knobs.as_document(config))


@attrs.frozen
class Rejection:
    """One rejection: its key, codes, the document to write and the rejected program (if any), with
    the validator's result on it (so that ``explain`` does not validate it again)."""

    key: str
    codes: tuple[str, ...]
    document: dict[str, Any]
    program: MegakernelProgram | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    validation: ValidationResult | None = None

    @classmethod
    def from_issues(cls, sid: str, config: Any, issues: Sequence[knobs.KnobIssue]) -> Rejection:
        """A config the knob checks refused (no program exists: every finding is rule-only)."""
        paths = [(i.code, i.path.split(".")[0] if i.path.startswith("sm_assignment") else i.path)
                 for i in issues]
        parts = [f"{_code(code)}@{_name(path)}" for code, path in paths]
        codes = tuple(dict.fromkeys(i.code for i in issues))
        findings = [{**i.to_dict(), "status": "rule-only"} for i in issues]
        doc = {"schedule_id": sid, "stage": "knob checks (before lowering)", "codes": list(codes),
               "config": _config_doc(config), "findings": findings}
        return cls(_key(parts), codes, doc)

    @classmethod
    def from_program(cls, sid: str, config: ScheduleConfig, prog: MegakernelProgram,
                     result: ValidationResult) -> Rejection:
        """A lowered program :func:`amkspec.validate` rejected (``result``: its verdict)."""
        errors = tuple(d for d in result.diagnostics if d.severity is Severity.ERROR)
        codes = tuple(dict.fromkeys(d.code for d in errors))
        doc = {"schedule_id": sid, "stage": "validate() of the lowered program", "codes": list(codes),
               "config": knobs.config_dict(config)}
        return cls(_key([_code(c) for c in codes]), codes, doc, prog, errors, result)

    @classmethod
    def from_lowering(cls, sid: str, config: ScheduleConfig, error: str, exc: BaseException) -> Rejection:
        """A config the lowering raised on (``error``: the verdict's reason); no program exists."""
        doc = {"schedule_id": sid, "stage": "lowering", "codes": [], "config": knobs.config_dict(config),
               "error": error}
        return cls(_key([f"lowering@{_name(type(exc).__name__)}"]), (), doc)


def _explained(rej: Rejection, stem: Path) -> dict[str, Any]:
    """The findings of ``explain`` on the program, writing one DOT file per replayed witness."""
    prog = rej.program
    assert prog is not None
    try:
        from amkspec.smt.explain import explain
        from amkspec.smt.witness import render_dot

        explanation = explain(prog, validation=rej.validation)
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
