"""``amkspec certify``, ``check-cert`` and ``check-validator``: evidence about the validator's
verdicts (spec §3).

``check-validator`` is the exhaustive small-scope check of ``validate()``: it prints the domain's
size and how far the run got per task count (a Markdown table) and a summary line on stdout
(``--json``: the whole report); progress on stderr. Exit 0 when the two agreed on every class
checked, 1 on a disagreement, 2 for unusable options or another run's checkpoint, 130 when
interrupted (a rerun continues from the checkpoint).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.files import read_json_file, refuse_inputs, write_output
from amkspec.cli.options import FiniteFloatRange, executor_options
from amkspec.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED
from amkspec.ir import MegakernelProgram


def _accepted(prog: MegakernelProgram, file: str) -> None:
    from amkspec.proofs import Severity, validate

    errors = [d for d in validate(prog).diagnostics if d.severity is Severity.ERROR]
    if errors:
        fail(
            f"{file}: REJECTED ({errors[0].code}: {errors[0].message}); "
            "only accepted programs get a certificate",
            EXIT_REJECTED,
        )


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), required=True, help="where to write the certificate"
)
@clean_errors
def certify(file: str, output: str) -> None:
    """Write a certificate (execution order + happens-before paths) for an accepted program."""
    from amkspec.evidence.certificate import CertificateError
    from amkspec.evidence.certificate import certify as make

    refuse_inputs(output, [file])
    prog = load_program(file)
    _accepted(prog, file)
    try:
        cert = make(prog)
    except CertificateError as exc:
        fail(f"{file}: {exc}", EXIT_REJECTED)
    write_output(output, json.dumps(cert, indent=1) + "\n", [file])
    click.echo(
        f"{output}: certificate of {len(cert['order'])} tasks, {len(cert['paths'])} happens-before "
        f"paths, {len(cert['pages'])} shared pages"
    )


@main.command("check-cert")
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("cert", type=click.Path(dir_okay=False))
@clean_errors
def check_cert(file: str, cert: str) -> None:
    """Check a certificate against a program with the independent linear-time checker."""
    from amkspec.evidence.certificate_check import CertificateRefused, MalformedCertificate, check_certificate

    prog = load_program(file)
    data = read_json_file(cert)
    try:
        check_certificate(prog, data)
    except MalformedCertificate as exc:
        fail(f"{cert}: not a certificate: {exc}")
    except CertificateRefused as exc:
        fail(f"{cert}: certificate REFUSED: {exc}", EXIT_REJECTED)
    click.echo(f"{cert}: certificate OK for {file}")


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
