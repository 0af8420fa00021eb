"""Would compiling the validator make it fast enough? ``validate()`` interpreted against the same
source compiled with mypyc (issue 13).

Run: ``python3 benchmarks/compiled.py [--repeat N] [--write-results]`` (needs mypy, from the
``test`` extra, and a C compiler; a minute to compile).

It copies ``amkspec/`` to a temporary folder and compiles there, with ``mypyc``, every module of
:mod:`amkspec.proofs` that defines no attrs record (mypyc cannot compile an attrs class as a
native class; those modules stay interpreted and are imported by the compiled ones). Then two
fresh interpreters, one importing the repository's amkspec and one the compiled copy, time
``validate()`` on the lowered toy models and the layered 8k program (median process-CPU time) and
hash everything each result says (every diagnostic and the stats). A speed-up is printed only for
a program both give the same result on; otherwise the row says they differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # not the repository: see measure()

from baseline import ROOT
from tables import write_result

RECORD = re.compile(r"^@attrs\.(define|frozen|mutable)", re.MULTILINE)
ASIDE = ("rule_keys.py", "codes.py")
"""Modules that only name rules and codes (compiling those makes mypyc lose the types of the
constants other modules import from them)."""


def compilable(package: Path) -> list[Path]:
    """The modules of ``package/proofs`` (sub-packages included) that define no attrs record,
    ``validate.py`` first: mypyc infers the rule constants' types only in that import order."""
    return sorted(
        (path for path in (package / "proofs").rglob("*.py")
         if path.name not in ("__init__.py", *ASIDE) and not RECORD.search(path.read_text())),
        key=lambda path: (path.name != "validate.py", path),
    )


def compile_copy(into: Path) -> list[str]:
    """Copy ``amkspec/`` (and the mypy settings) under ``into`` and compile the :func:`compilable`
    modules there in place; return their names relative to ``into``."""
    shutil.copytree(ROOT / "amkspec", into / "amkspec", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", into)  # the project's mypy settings
    modules = [str(p.relative_to(into)) for p in compilable(into / "amkspec")]
    done = subprocess.run([sys.executable, "-m", "mypyc", *modules], cwd=into, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"mypyc failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return modules


def child(repeat: int) -> None:
    """In a child interpreter: time and fingerprint ``validate()`` on each program; print JSON."""
    from inputs import lowered
    from timing import median_cpu

    import amkspec.proofs.index as index
    from amkspec.ir import loads
    from amkspec.programs.families import decoder_layers
    from amkspec.proofs import validate

    programs = [(name, loads(text)) for name, text in lowered()] + [("layered 8k", decoder_layers(8000))]
    rows = {}
    for name, prog in programs:
        result = validate(prog)
        said = repr([(d.code, d.message, d.tasks, d.buffers, d.counters) for d in result.diagnostics])
        said += repr(sorted(result.stats.items()))
        times = repeat if len(prog.tasks) < 5000 else max(3, repeat // 8)
        rows[name] = [len(prog.tasks), median_cpu(lambda p=prog: validate(p), times),
                      hashlib.sha256(said.encode()).hexdigest()]
    print(json.dumps({"compiled": not index.__file__.endswith(".py"), "rows": rows}))


def measure(path: Path, repeat: int) -> dict:
    """Run :func:`child` with ``path`` first on the module search path."""
    env = dict(os.environ, PYTHONPATH=str(path))
    done = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(repeat)], env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="amkspec-mypyc-") as tmp:
        modules = compile_copy(Path(tmp))
        print(f"compiled {len(modules)} modules with mypyc: {', '.join(m.split('/')[-1] for m in modules)}")
        plain, built = measure(ROOT, args.repeat), measure(Path(tmp), args.repeat)
    assert not plain["compiled"] and built["compiled"], "each child must import the intended amkspec"
    rows = ["| program | tasks | interpreted ms | compiled ms | speed-up |", "|---|---:|---:|---:|---:|"]
    for name, (tasks, ours, fingerprint) in plain["rows"].items():
        _, theirs, other = built["rows"][name]
        speed = f"{ours / theirs:.2f}x" if fingerprint == other else "results differ"
        print(f"  {name:34s} {tasks:6d} tasks: interpreted {ours * 1e3:8.3f} ms, "
              f"compiled {theirs * 1e3:8.3f} ms, {speed}")
        rows.append(f"| {name} | {tasks:,} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {speed} |")
    if args.write_results:
        write_result("validate_compiled.md", rows)


if __name__ == "__main__":
    main()
