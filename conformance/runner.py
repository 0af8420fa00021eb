"""The conformance runner: cases and the implementation under test (spec §9).

A case is judged through an *implementation object* with one method,
``validate(program_json: dict) -> {"verdict": "accepted" | "rejected" | "unusable", "codes": [...]}``
("unusable": the document is not a representable program — a FormatError or VersionError).
:class:`AmkspecImplementation` is the default (amkspec itself, in-process); an external
implementation plugs in by providing another object with the same method (the stdin/stdout
protocol adapter comes later) and overriding the ``implementation`` fixture.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Protocol

CONFORMANCE = Path(__file__).resolve().parent
CASES = CONFORMANCE / "cases"
sys.path.insert(0, str(CONFORMANCE.parent))


class Implementation(Protocol):
    name: str

    def validate(self, program_json: dict[str, Any]) -> dict[str, Any]: ...


class AmkspecImplementation:
    """amkspec's own loader and validator, called in-process."""

    name = "amkspec (in-process)"

    def validate(self, program_json: dict[str, Any]) -> dict[str, Any]:
        from amkspec.ir import AmkspecError, from_dict
        from amkspec.proofs import validate

        try:
            prog = from_dict(program_json)
        except AmkspecError as exc:
            return {"verdict": "unusable", "codes": [], "error": str(exc)}
        result = validate(prog)
        return {"verdict": "accepted" if result.ok else "rejected", "codes": result.codes}


def case_files() -> list[Path]:
    return sorted(CASES.rglob("*.json"))


def load_case(path: Path) -> dict[str, Any]:
    """A case with its program resolved (``program`` inline or ``program_file`` relative to the case)."""
    case: dict[str, Any] = json.loads(path.read_text())
    if "program_file" in case:
        case["program"] = json.loads((path.parent / case["program_file"]).read_text())
    return case
