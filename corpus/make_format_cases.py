"""Generate the format cases (kind ``format``, spec §6) under ``corpus/cases/format/``.

Each case is a document's exact text and either ``loaded`` (the implementation must re-serialise
it byte for byte, as one of ``expect.documents`` where several texts conform) or ``refused``, with the
error class and JSON path a reader should name (rules FMT-ERR-1 and FMT-ERR-2, amkspec's vocabulary).
Paths are written as in spec §6.4 (``tasks[1].waits[0].threshold``; ``(root)`` for the document
itself); the judge also accepts their RFC 6901 JSON Pointer.

Run ``python3 -m corpus.make_format_cases`` from the repository root; a test checks that the
committed files equal this script's output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amkspec.conformance.rules import ERROR_CLASS, ERROR_PATH
from amkspec.ir import dumps
from corpus.casefiles import write_cases
from corpus.make_cases import base_program

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
    doc["target"]["x_tensor_mem_kb"] = 999
    doc["config"]["x_search_dim"] = 7
    doc["tasks"][1]["x_hint"] = 3
    doc["buffers"][0]["x_layout"] = "row"


def _drop(key: str) -> Edit:
    return lambda doc: doc.pop(key)


def _delete(path: str) -> Edit:
    """Remove the member at ``path`` (``tasks[1].out_counter``)."""

    def apply(doc: dict[str, Any]) -> None:
        *parents, last = path.replace("]", "").replace("[", ".").split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return apply


def _edits(*edits: Edit) -> Edit:
    def apply(doc: dict[str, Any]) -> None:
        for edit in edits:
            edit(doc)

    return apply


def _duplicate(text: str, anchor: str, extra: str) -> str:
    """``text`` with ``extra`` (a ``"key": value`` member) inserted right after the first ``anchor``."""
    at = text.index(anchor) + len(anchor)
    return text[:at] + extra + text[at:]


def loaded(
    slug: str, rule: str, description: str, text: str, *also: str
) -> tuple[str, dict[str, Any]]:
    """A document that must load and re-serialise as itself (or as one of ``also``)."""
    expect: dict[str, Any] = {"outcome": "loaded"}
    if also:
        expect["documents"] = [text, *also]
    return slug, {
        "kind": "format",
        "description": description,
        "rules": [rule],
        "document": text,
        "expect": expect,
    }


def refused(
    slug: str, rule: str, description: str, text: str, error_class: str, path: str
) -> tuple[str, dict[str, Any]]:
    return slug, {
        "kind": "format",
        "description": description,
        "rules": [rule, ERROR_CLASS, ERROR_PATH],
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
            "unknown_fields_load",
            "FMT-UNK-1",
            "unknown fields at the top level, in target, config, a task and a buffer do not stop a load; "
            "they are written back after the known keys or dropped (as the original drops them)",
            _doc(_add_unknown_fields),
            base,
        ),
        loaded(
            "unknown_fields_kept",
            "FMT-UNK-2",
            "unknown fields at the top level, in target, config, a task and a buffer are kept and written "
            "back after the known keys",
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
    return {f"{slug}.json": doc for slug, doc in cases + _more_cases()}


def _more_cases() -> list[tuple[str, dict[str, Any]]]:
    """A null target (§1.1), integer-map keys (§6.1), required record fields, integral types and
    broken-but-representable documents (§6.4)."""
    return [
        loaded(
            "target_null",
            "DATA-TARGET-1",
            "a program whose target is null loads and re-serialises byte for byte",
            _doc(_set("target", None)),
        ),
        loaded(
            "sm_assignment_integer_keys",
            "FMT-KEY-2",
            'an explicit sm_assignment keyed by "0", "3" and "-1" (every key matches ^-?[0-9]+$)',
            _doc(_set("config.sm_assignment", {"0": 0, "3": 1, "-1": 2})),
        ),
        refused(
            "sm_assignment_key_not_decimal",
            "FMT-KEY-2",
            'an sm_assignment key "3a", which is not a decimal integer',
            _doc(_set("config.sm_assignment", {"0": 0, "3a": 1})),
            "FormatError",
            'config.sm_assignment["3a"]',
        ),
        refused(
            "sm_assignment_key_plus_sign",
            "FMT-KEY-1",
            'an sm_assignment key "+3": a sign other than "-" does not match ^-?[0-9]+$',
            _doc(_set("config.sm_assignment", {"+3": 1})),
            "FormatError",
            'config.sm_assignment["+3"]',
        ),
        refused(
            "missing_task_out_counter",
            "FMT-REQ-2",
            "task 1 without its out_counter",
            _doc(_delete("tasks[1].out_counter")),
            "FormatError",
            "tasks[1]",
        ),
        refused(
            "missing_wait_threshold",
            "FMT-REQ-2",
            "a wait of task 1 without its threshold",
            _doc(_delete("tasks[1].waits[0].threshold")),
            "FormatError",
            "tasks[1].waits[0]",
        ),
        refused(
            "threshold_boolean",
            "FMT-TYPE-1",
            "a wait threshold given as true: booleans are not integers",
            _doc(_set("tasks[1].waits[0].threshold", True)),
            "FormatError",
            "tasks[1].waits[0].threshold",
        ),
        refused(
            "out_counter_float",
            "FMT-TYPE-1",
            "an out_counter given as 1.0: a float is not an integer",
            _doc(_set("tasks[1].out_counter", 1.0)),
            "FormatError",
            "tasks[1].out_counter",
        ),
        loaded(
            "broken_ids_not_positions",
            "FMT-LOAD-1",
            "buffer 2 numbered 7 and counter 1 numbered 9: ids that are not list positions still load",
            _doc(_edits(_set("buffers[2].id", 7), _set("counters[1].id", 9))),
        ),
        loaded(
            "broken_dangling_references",
            "FMT-LOAD-1",
            "a task reading buffer 99 and waiting on counter 42, neither of which exists, still loads",
            _doc(_edits(_set("tasks[1].inputs", [2, 99]), _set("tasks[1].waits[0].counter", 42))),
        ),
        loaded(
            "broken_zero_threshold",
            "FMT-LOAD-1",
            "a wait threshold of 0 still loads",
            _doc(_set("tasks[1].waits[0].threshold", 0)),
        ),
        loaded(
            "broken_wait_cycle",
            "FMT-LOAD-1",
            "task 0 waits on the counter of task 1, which waits on task 0's: a cycle of waits still loads",
            _doc(_set("tasks[0].waits", [{"counter": 1, "threshold": 1}])),
        ),
        loaded(
            "broken_nan_param",
            "FMT-LOAD-1",
            "a NaN in a task's params still loads",
            _doc(_set("tasks[1].params.n_off", float("nan"))),
        ),
    ]


def main() -> int:
    n = write_cases(OUT_DIR, build_cases())
    print(f"wrote {n} format cases to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
