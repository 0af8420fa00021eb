"""Tables of the architecture page, generated from :mod:`amkspec.architecture`."""

from __future__ import annotations

from amkspec.architecture import FAST_PATHS, LAYERS


def _code(name: str) -> str:
    return f"``{name}``"


def layers() -> tuple[list[str], list[list[str]]]:
    """One row per floor, the top first (what a reader meets first)."""
    rows = [
        [str(floor), layer.name, ", ".join(map(_code, layer.packages)), layer.role]
        for floor, layer in reversed(list(enumerate(LAYERS)))
    ]
    return ["floor", "name", "packages", "what it holds"], rows


def fast_paths() -> tuple[list[str], list[list[str]]]:
    """One row per fast path: the reference defines the behaviour, the tests compare the two."""
    rows = [
        [_code(p.fast), _code(p.reference), ", ".join(_code(t) for t in p.tests)]
        for p in FAST_PATHS
    ]
    return ["fast path", "reference (defines the behaviour)", "property tests"], rows
