"""The house keeps its plan (:mod:`amkspec.architecture`, issue 30): every module on a floor, every
import going down the floors, no import cycle, the lower floors free of torch and z3, no source
file over 900 lines, the validator under 4,500 lines, every fast path named beside its reference
and tested against it."""

from __future__ import annotations

import ast
import graphlib
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amkspec.architecture import FAST_PATHS, LAYERS, FastPath
from tests.conftest import ROOT

PACKAGES = ("amkspec", "vm_cuda")
"""The importable trees of the repository (``vm_cuda`` is the megakernel, spec §8)."""

FLOOR = {package: floor for floor, layer in enumerate(LAYERS) for package in layer.packages}

LIGHT = ("amkspec.ir", "amkspec.footprint", "amkspec.proofs", "amkspec.evidence")
"""Floors a laptop without torch or z3 can import (reading, validating and certifying programs)."""

SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".h", ".cpp", ".c", ".md", ".toml", ".cfg", ".sh")
SKIP = {"_build", "_generated", "build", "dist", "out", "__pycache__"}
MAX_LINES, MAX_PROOFS_LINES = 900, 4_500


def _modules() -> dict[str, Path]:
    """Dotted name → file of every module of :data:`PACKAGES`."""
    found: dict[str, Path] = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _owner(module: str) -> str | None:
    """The longest package of LAYERS that holds ``module`` (``amkspec`` holds only itself)."""
    holders = [p for p in FLOOR if module == p or (p != "amkspec" and module.startswith(p + "."))]
    return max(holders, key=len, default=None)


def _type_checking_only(tree: ast.Module) -> set[int]:
    return {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """``(imported module of the repository, line)`` of every import of ``module``, those inside
    functions included, those under ``if TYPE_CHECKING`` left out."""
    tree = ast.parse(MODULES[module].read_text())
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node.lineno


def test_every_module_is_on_a_floor() -> None:
    assert [m for m in MODULES if _owner(m) is None] == []
    assert [p for p in FLOOR if p not in MODULES] == []  # every listed package exists


def test_every_import_goes_down_the_floors() -> None:
    upward = [
        f"{MODULES[m].relative_to(ROOT)}:{line}: {target} ({_owner(target)} is not below {_owner(m)})"
        for m in MODULES
        for target, line in _imports(m)
        if _owner(target) != _owner(m) and FLOOR[_owner(target) or ""] >= FLOOR[_owner(m) or ""]
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    """None between packages, none between modules (imports inside functions count for both)."""
    packages = {p: {_owner(t) for m in MODULES if _owner(m) == p for t, _ in _imports(m)} for p in FLOOR}
    packages = {p: targets - {p} for p, targets in packages.items()}
    modules = {m: {t for t, _ in _imports(m)} for m in MODULES}
    for graph in (packages, modules):
        try:
            list(graphlib.TopologicalSorter(graph).static_order())
        except graphlib.CycleError as exc:
            pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_lower_floors_import_neither_torch_nor_z3() -> None:
    light = sorted(m for m in MODULES if _owner(m) in LIGHT)
    heavy = "sorted({'torch', 'z3'} & set(sys.modules))"
    probe = f"import sys\nfor m in {light!r}: __import__(m)\nprint({heavy})"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", light


def _sources() -> Iterator[Path]:
    """Source files of the repository (not build outputs, caches or hidden folders)."""
    for path in ROOT.rglob("*"):
        folders = path.relative_to(ROOT).parts[:-1]
        hidden = any(f.startswith(".") or f.endswith(".egg-info") for f in folders)
        skipped = hidden or SKIP.intersection(folders)
        if path.suffix in SOURCE_SUFFIXES and not skipped and path.is_file():
            yield path


def test_no_source_file_is_over_900_lines() -> None:
    """Generated data (JSON programs, corpus cases, golden outputs) is not source."""
    counts = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _sources()}
    assert {name: n for name, n in counts.items() if n > MAX_LINES} == {}


def test_the_validator_is_under_4500_lines() -> None:
    lines = sum(len(p.read_text().splitlines()) for p in (ROOT / "amkspec" / "proofs").rglob("*.py"))
    assert lines < MAX_PROOFS_LINES


def _resolve(dotted: str) -> object:
    """The object a dotted name means: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr)
        return found
    raise ImportError(dotted)


@pytest.mark.parametrize("path", FAST_PATHS, ids=lambda p: p.fast)
def test_every_fast_path_names_its_reference_and_its_test(path: FastPath) -> None:
    assert _resolve(path.fast) is not _resolve(path.reference)
    assert path.tests
    for test in path.tests:
        file, _, name = test.partition("::")
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
        assert name.startswith("test_") and callable(getattr(module, name, None)), test
