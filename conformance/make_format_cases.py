"""Generate the format cases (kind ``format``, spec §6) under ``conformance/cases/format/``.

Each case is a document's exact text and either ``loaded`` (the implementation must re-serialise
it byte for byte) or ``refused`` with the error class and JSON path a reader must name. Paths are
written as in spec §6.4 (``tasks[1].waits[0].threshold``; ``(root)`` for the document itself).

Run ``python3 -m conformance.make_format_cases`` from the repository root; a test checks that the
committed files equal this script's output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amkspec.ir import dumps
from conformance.casefiles import write_cases
from conformance.make_cases import base_program

OUT_DIR = Path(__file__).resolve().parent / "cases" / "format"
Edit = Callable[[dict[str, Any]], None]


def _doc(edit: Edit | None = None) -> str:
    doc = json.loads(dumps(base_program()))
    if edit is not None:
        edit(doc)
    return json.dumps(doc, indent=2)


def _toy() -> str:
    from amkspec.lower.lowering import lower

    return dumps(lower("toy", "h100", pos=2))


def _set(path: str, value: Any) -> Edit:
    def apply(doc: dict[str, Any]) -> None:
        *parents, last = path.replace("]", "").replace("[", ".").split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return apply


def _add_unknown_fields(doc: dict[str, Any]) -> None:
    doc["x_vendor"] = {"note": [1, 2]}
    doc["tasks"][1]["x_hint"] = 3
    doc["buffers"][0]["x_layout"] = "row"


def _drop(key: str) -> Edit:
    return lambda doc: doc.pop(key)


def _duplicate(text: str, anchor: str, extra: str) -> str:
    """``text`` with ``extra`` (a ``"key": value`` member) inserted right after the first ``anchor``."""
    at = text.index(anchor) + len(anchor)
    return text[:at] + extra + text[at:]


def loaded(slug: str, rule: str, description: str, text: str) -> tuple[str, dict[str, Any]]:
    return slug, {
        "kind": "format",
        "description": description,
        "rules": [rule],
        "document": text,
        "expect": {"outcome": "loaded"},
    }


def refused(
    slug: str, rule: str, description: str, text: str, error_class: str, path: str
) -> tuple[str, dict[str, Any]]:
    return slug, {
        "kind": "format",
        "description": description,
        "rules": [rule],
        "document": text,
        "expect": {"outcome": "refused", "error_class": error_class, "path": path},
    }


def build_cases() -> dict[str, dict[str, Any]]:
    """File name → case document."""
    base = _doc()
    cases = [
        loaded("roundtrip_base", "FMT-RT-1", "a small canonical program re-serialises byte for byte", base),
        loaded(
            "roundtrip_toy",
            "FMT-RT-1",
            "the lowered toy model (with target, config, SMs and pages) re-serialises byte for byte",
            _toy(),
        ),
        loaded(
            "unknown_fields_kept",
            "FMT-UNK-1",
            "unknown fields at the top level, in a task and in a buffer are kept and written back in place",
            _doc(_add_unknown_fields),
        ),
        loaded(
            "newer_minor_version",
            "FMT-VER-2",
            "ir_version 0.9.0 (same major, newer minor) loads",
            _doc(_set("ir_version", "0.9.0")),
        ),
        refused("not_json", "FMT-JSON-1", "text that is not JSON", base[:-3], "FormatError", "(root)"),
        refused(
            "not_an_object",
            "FMT-JSON-1",
            "a JSON array instead of a program object",
            "[1, 2, 3]",
            "FormatError",
            "(root)",
        ),
        refused(
            "threshold_string",
            "FMT-TYPE-1",
            'a wait threshold given as the string "1"',
            _doc(_set("tasks[1].waits[0].threshold", "1")),
            "FormatError",
            "tasks[1].waits[0].threshold",
        ),
        refused(
            "shape_not_array",
            "FMT-TYPE-1",
            "a buffer shape given as an object",
            _doc(_set("buffers[2].shape", {"0": 1})),
            "FormatError",
            "buffers[2].shape",
        ),
        refused(
            "unknown_dtype",
            "FMT-ENUM-1",
            "buffer dtype F64, which no IR version defines",
            _doc(_set("buffers[1].dtype", "F64")),
            "FormatError",
            "buffers[1].dtype",
        ),
        refused(
            "unknown_opcode",
            "FMT-ENUM-1",
            "task op MATMUL, which is not an InstructionKind name",
            _doc(_set("tasks[3].op", "MATMUL")),
            "FormatError",
            "tasks[3].op",
        ),
        refused(
            "missing_tasks",
            "FMT-REQ-1",
            "a document without tasks",
            _doc(_drop("tasks")),
            "FormatError",
            "(root)",
        ),
        refused(
            "major_ir_version",
            "FMT-VER-1",
            "ir_version 1.0.0: another major version",
            _doc(_set("ir_version", "1.0.0")),
            "VersionError",
            "ir_version",
        ),
        refused(
            "major_abi_version",
            "FMT-VER-1",
            "abi_version 1.0: another major version",
            _doc(_set("abi_version", "1.0")),
            "VersionError",
            "abi_version",
        ),
        refused(
            "duplicate_top_level_key",
            "FMT-DUP-1",
            'the top-level key "meta" appears twice',
            _duplicate(base, "{\n", '  "meta": {"model": "first"},\n'),
            "FormatError",
            "(root)",
        ),
        refused(
            "duplicate_task_key",
            "FMT-DUP-1",
            'task 2 repeats the key "op" (the two values differ)',
            _duplicate(base, '"op": "GEMV_TILE",', '\n      "op": "ADD",'),
            "FormatError",
            "tasks[1]",
        ),
    ]
    return {f"{slug}.json": doc for slug, doc in cases}


def main() -> int:
    n = write_cases(OUT_DIR, build_cases())
    print(f"wrote {n} format cases to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
