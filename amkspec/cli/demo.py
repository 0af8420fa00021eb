"""``amkspec demo [DIR]``: amkspec's main job, run on the bundled example programs.

The demo is a list of steps, :data:`DEMO_STEPS`, run in order on the examples directory.
Each step prints its own section and returns True when everything in it behaved as
expected; the demo exits 0 only if every step did.

How to add a step (for example "lower the toy models, run them on the ReferenceVM and print
agreement with eager")::

    from amkspec.cli.demo import demo_step

    @demo_step
    def run_toy_models(examples: Path) -> bool:
        click.echo("== toy models on the ReferenceVM ==")
        ...
        return all_agree

Put it in your own CLI module (imported from ``amkspec/cli/__init__.py``): the decorator
appends it to :data:`DEMO_STEPS`, after the steps registered before it. Keep a step fast
(seconds) and quiet: one line per item, a clear verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

import amkspec
from amkspec.cli.base import escape_line, fail, main, read_program
from amkspec.cli.display import display_program
from amkspec.cli.ir_commands import verdict, verdict_line
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED
from amkspec.ir import AmkspecError
from amkspec.ir.summary import one_line

DemoStep = Callable[[Path], bool]

DEMO_STEPS: list[DemoStep] = []
"""The steps of ``amkspec demo``, in run order."""

REJECTED_PREFIX = "rejected_"
"""An example whose file name starts with this is expected to be rejected by validate()."""


def demo_step(step: DemoStep) -> DemoStep:
    """Register ``step`` as the next step of the demo (use as a decorator)."""
    DEMO_STEPS.append(step)
    return step


def default_examples_dir() -> Path:
    """The repository's ``examples/`` next to the package, else ``./examples``."""
    beside_package = Path(amkspec.__file__).resolve().parent.parent / "examples"
    return beside_package if beside_package.is_dir() else Path.cwd() / "examples"


def _check_program(path: Path) -> bool:
    """Load, summarise and validate one example; True when the verdict is the expected one."""
    try:
        prog = read_program(str(path))
    except (AmkspecError, OSError) as exc:
        click.echo(f"{path.name}: cannot be loaded: {escape_line(str(exc))}")
        return False
    click.echo(f"{path.name}: {one_line(display_program(prog))}")
    v = verdict(prog, escaped=True)
    expect_valid = not path.name.startswith(REJECTED_PREFIX)
    as_expected = v["valid"] == expect_valid
    wanted = "valid" if expect_valid else "rejected"
    expectation = "as expected" if as_expected else f"UNEXPECTED: expected {wanted}"
    click.echo(f"  {verdict_line(v)}, {expectation}")
    for err in v["first_errors"]:
        click.echo(f"    error: {err}")
    return as_expected


@demo_step
def check_programs(examples: Path) -> bool:
    """Every ``*.json`` program: loads, has a summary, and validates iff it is not ``rejected_*``."""
    files = sorted(examples.glob("*.json"))
    click.echo(f"== programs in {examples} ==")
    if not files:
        click.echo("  no *.json programs found")
        return False
    results = [_check_program(f) for f in files]
    click.echo(f"  {sum(results)} of {len(results)} programs behaved as expected")
    return all(results)


@main.command()
@click.argument("directory", required=False, type=click.Path())
def demo(directory: str | None) -> None:
    """Load, summarise and validate every example program (default: the bundled examples/).

    Programs named rejected_*.json are expected to be rejected, all others to be valid.
    Exits 0 if every step behaved as expected, 1 otherwise, 2 if DIR does not exist.
    """
    examples = Path(directory) if directory is not None else default_examples_dir()
    if not examples.is_dir():
        problem = "not a directory" if examples.exists() else "no such directory"
        fail(f"{examples}: {problem} (pass the examples directory as DIR)")
    ok = True
    for step in DEMO_STEPS:
        ok = step(examples) and ok
    click.echo("demo: all steps behaved as expected" if ok else "demo: some steps did NOT behave as expected")
    raise SystemExit(EXIT_OK if ok else EXIT_REJECTED)
