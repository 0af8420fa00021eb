"""The JSON Schemas the kit ships next to its cases (spec §6.6, §9.3): the program format and the
harness protocol, generated from the code. ``python3 -m corpus.schemas`` rewrites them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amkspec.conformance.protocol import SCHEMA
from amkspec.ir.atomic import write_atomic
from amkspec.ir.schema import program_schema
from corpus.casefiles import render

KIT = Path(__file__).resolve().parent
SCHEMAS: dict[str, Any] = {"protocol.schema.json": SCHEMA, "program.schema.json": program_schema()}


def main() -> None:
    for name, schema in SCHEMAS.items():
        write_atomic(KIT / name, render(schema))


if __name__ == "__main__":
    main()
