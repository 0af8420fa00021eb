"""The CLI's layout: one module per package it drives under ``amkspec/cli/commands/``; no command
module imports another (what they share lives in ``amkspec/cli/``)."""

from __future__ import annotations

import ast
from pathlib import Path

import amkspec
from amkspec.cli import main

COMMANDS = Path(amkspec.__file__).parent / "cli" / "commands"
PACKAGE = "amkspec.cli.commands"


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in the file (``from X import y`` counts ``X`` and ``X.y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_no_command_module_imports_another() -> None:
    modules = sorted(p for p in COMMANDS.glob("*.py") if p.name != "__init__.py")
    assert len(modules) >= 10
    for path in modules:
        others = {m for m in _imported(path) if m == PACKAGE or m.startswith(PACKAGE + ".")}
        assert not others, f"{path.name} imports {sorted(others)}"


def test_every_command_comes_from_a_command_module() -> None:
    names = {p.stem for p in COMMANDS.glob("*.py") if p.name != "__init__.py"}
    for command in main.commands.values():
        module = command.callback.__module__ if command.callback else ""
        assert module.rpartition(".")[0] == PACKAGE and module.rpartition(".")[2] in names, command.name
