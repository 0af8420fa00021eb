"""``amkspec check-validator``: the exhaustive small-scope check of ``validate()`` (spec §3).

Prints the domain's size and how far the run got per task count (a Markdown table) and a summary
line on stdout (``--json``: the whole report); progress on stderr. Exit 0 when the two agreed on
every class checked, 1 on a disagreement, 2 for unusable options or another run's checkpoint, 130
when interrupted (a rerun continues from the checkpoint).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from amkspec.cli.base import clean_errors, echo_json, fail, main
from amkspec.cli.params import FiniteFloatRange, executor_options
from amkspec.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED

SIZE = click.IntRange(1, None)
"""A size of the domain (its largest values: :data:`amkspec.evidence.exhaustive.domain.LIMITS`)."""


@main.command("check-validator")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Checkpoint and disagreement files; a rerun into it continues.")
@click.option("--tasks", type=SIZE, default=4, show_default=True, help="Up to this many tasks.")
@click.option("--buffers", type=SIZE, default=2, show_default=True, help="Data buffers.")
@click.option("--counters", type=SIZE, default=2, show_default=True, help="Counters.")
@click.option("--threshold", type=SIZE, default=2, show_default=True,
              help="The largest wait threshold.")
@click.option("--init", is_flag=True, help="Counter init 0 or 1 (S103 rejects 1).")
@click.option("--sm", is_flag=True, help="Tasks on SM 0 or 1 (the task list order matters).")
@click.option("--pages", is_flag=True, help="The two data buffers may share a page (needs --buffers 2).")
@click.option("--minutes", type=FiniteFloatRange(0.01, None), default=10.0, show_default=True,
              help="Stop after this long (a rerun continues where it stopped).")
@click.option("--shard-size", type=click.IntRange(1, None), default=None,
              help="Raw task lists per job (default: amkspec.evidence.exhaustive.check.SHARD_SIZE).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option("--quiet", is_flag=True, help="No progress output.")
@executor_options
@clean_errors
def check_validator(out_dir: str, tasks: int, buffers: int, counters: int, threshold: int, init: bool,
                    sm: bool, pages: bool, minutes: float, shard_size: int | None, as_json: bool, quiet: bool,
                    executor: str, workers: int | None, address: str | None) -> None:
    """validate() against the model checker on every program of a bounded domain, one per symmetry
    class: sharded, checkpointed, on --executor. Each disagreement is shrunk to a minimal program
    written under OUT/disagreements/."""
    from amkspec.evidence.exhaustive.check import SHARD_SIZE, check
    from amkspec.evidence.exhaustive.domain import Bound
    from amkspec.executors import make_executor

    try:
        bound = Bound(tasks, buffers, counters, threshold, init, sm, pages)
    except ValueError as exc:  # a size over its limit, --pages with other than 2 buffers
        fail(f"the domain: {exc}")
    with make_executor(executor, workers, address) as pool:
        report = check(bound, out_dir, executor=pool, minutes=minutes, shard_size=shard_size or SHARD_SIZE,
                       on_shard=None if quiet else _progress())
    if as_json:
        echo_json(report.to_dict())
    else:
        for row in report.table():
            click.echo(row)
        click.echo(report.summary())
        for d in report.disagreements:
            click.echo(f"disagreement ({d['tasks']} tasks): {d['reason']}: {d['file']}")
    if report.interrupted:
        click.echo(f"amkspec: interrupted; rerun the same command to continue from {out_dir}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_REJECTED if report.disagreements else EXIT_OK)


def _progress() -> Any:
    """A line on stderr as each task count completes."""
    said: set[int] = set()

    def hook(result: Any, report: Any) -> None:
        for level in report.levels:
            if level.complete and level.tasks not in said:
                said.add(level.tasks)
                click.echo(f"all {level.classes:,} classes of {level.tasks} task(s) checked "
                           f"({report.seconds:.1f} s)", err=True)

    return hook
