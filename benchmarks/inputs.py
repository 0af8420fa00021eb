"""Inputs the benchmarks measure besides the program families of :mod:`amkspec.programs.families`.

- ``lowered``: the original's own lowering of the toy models (``compat=True`` reproduces it byte
  for byte), across models, positions and tilings;
- ``fixtures``: the programs the original wrote itself (``tests/fixtures/amk``, read as data).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from amkspec.ir import ScheduleConfig, loads

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "amk"


LOWERED = [  # (model, position, GEMV N_tile or None for the original's auto tiling, split-KV partitions)
    ("toy", 0, 64, 0), ("toy", 5, 16, 0), ("toy-2L", 0, 64, 0), ("toy-2L", 47, 64, 4),
    ("toy-2L", 100, 8, 0), ("medium", 0, 64, 0), ("medium", 31, 128, 2), ("medium", 7, None, 0),
]


def lowered() -> Iterator[tuple[str, str]]:
    """(name, JSON text) of the original's lowering of the toy models (``compat=True``)."""
    from amkspec.ir import dumps
    from amkspec.lower import lower

    for model, pos, n_tile, parts in LOWERED:
        tiling: dict[str, dict[str, int]] = {}
        if n_tile is not None:
            tiling["gemv"] = {"N_tile": n_tile}
        if parts:
            tiling["attention"] = {"n_partitions": parts}
        config = ScheduleConfig(tiling=tiling) if tiling else None
        prog = lower(model, "h100", config, pos=pos, compat=True)
        yield f"{model} pos {pos} N_tile {n_tile or 'auto'}" + (f" split {parts}" if parts else ""), \
            dumps(prog)


def fixtures() -> Iterator[tuple[str, str]]:
    """(name, JSON text) of every program the original wrote (``tests/fixtures/amk``)."""
    for path in sorted(FIXTURES.glob("*.json*")):
        if path.name.endswith((".json", ".json.gz")) and "dtypes" not in path.name:
            raw = path.read_bytes()
            text = gzip.decompress(raw).decode() if path.suffix == ".gz" else raw.decode()
            loads(text)  # a program, not a side table
            yield path.name, text
