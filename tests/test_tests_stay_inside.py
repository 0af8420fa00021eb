"""Nothing outside ``tests/`` imports ``tests``: the package, tools, benchmarks, docs extensions and
examples draw their programs and helpers from ``amkspec`` (e.g. :mod:`amkspec.programs`)."""

from __future__ import annotations

import ast
import subprocess

from tests.conftest import ROOT


def _imports_tests(source: str, name: str) -> list[int]:
    """Lines of ``source`` that import ``tests`` or a module under it (anywhere in the file)."""
    lines = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
        else:
            continue
        if any(m == "tests" or m.startswith("tests.") for m in mods):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_sees_an_import_of_tests() -> None:
    assert _imports_tests("def f():\n    from tests.conftest import ROOT\nimport tests\n", "x") == [2, 3]
    assert _imports_tests("from amkspec import tests_of\nimport testsuite\n", "x") == []


def test_nothing_outside_tests_imports_tests() -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    outside = [f for f in files if not f.startswith("tests/") and (ROOT / f).is_file()]
    assert len(outside) > 100
    found = {f: lines for f in outside if (lines := _imports_tests((ROOT / f).read_text(), f))}
    assert not found, f"imports of tests outside tests/: {found}"
