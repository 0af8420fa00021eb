"""How the generators write the kit's JSON files (spec §9.2): one rendering, written atomically,
stale cases of the generator's own pattern removed, so the committed corpus is exactly its output."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amkspec.ir.atomic import write_atomic


def render(doc: Any) -> str:
    """A case or schema as committed: indented JSON, non-ASCII kept, one trailing newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_cases(out_dir: Path, docs: Mapping[str, Any], pattern: str = "*.json") -> int:
    """Write ``docs`` (file name → document) into ``out_dir``, removing files of ``pattern`` that the
    generator no longer makes; return how many were written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(pattern):
        if stale.name not in docs:
            stale.unlink()
    for name, doc in docs.items():
        write_atomic(out_dir / name, render(doc))
    return len(docs)
