"""``amkspec demo [DIR]``: amkspec's main job, the steps of :mod:`amkspec.cli.demo_steps` run on the
bundled example programs.
"""

from __future__ import annotations

from pathlib import Path

import click

from amkspec.cli.base import fail, main
from amkspec.cli.demo_steps import DEMO_STEPS, default_examples_dir
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED


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
