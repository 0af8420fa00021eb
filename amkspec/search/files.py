"""The search's state files: written atomically (a crash or Ctrl-C leaves the old file or the new one)."""

from __future__ import annotations

from pathlib import Path

from amkspec.ir.atomic import write_atomic


def atomic_write(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (creating its folder) through amkspec's one atomic writer."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
