"""The JSON Schemas the kit ships next to its cases (spec §6.6, §9.3): the program format and the
harness protocol, generated from the code. ``python3 -m conformance.schemas`` rewrites them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from amkspec.conformance.protocol import SCHEMA
from amkspec.ir.schema import program_schema

KIT = Path(__file__).resolve().parent
SCHEMAS: dict[str, Any] = {"protocol.schema.json": SCHEMA, "program.schema.json": program_schema()}


def render(schema: Any) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    for name, schema in SCHEMAS.items():
        (KIT / name).write_text(render(schema), encoding="utf-8")


if __name__ == "__main__":
    main()
