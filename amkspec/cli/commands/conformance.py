"""``amkspec conformance --impl CMD``: certify an implementation against the kit (spec §9.4).

Runs every case under ``--cases`` (default: the repository's ``corpus/cases``) against the
command ``CMD`` speaking the harness protocol (default: amkspec's own adapter), prints the summary
by chapter with the verdicts of both levels, and writes the JSON and JUnit reports on request.
Exit 0 when the implementation conforms at ``--level`` (default ``core``, the specification), 1
when it does not, 2 (one line on stderr, before any case is judged) when the cases cannot be read,
none is selected, the implementation does not start, or a report would land in the cases folder
(every file there is an input: a report never replaces a case).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from amkspec.cli.base import fail, main
from amkspec.cli.files import refuse_inputs, write_output
from amkspec.cli.options import TIMEOUT
from amkspec.conformance.rules import LEVELS, Level
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED

DEFAULT_IMPL = f"{shlex.quote(sys.executable)} -m amkspec.conformance.adapter --vm reference"


def _refuse_in_cases(output: str | None, root: Path) -> None:
    """Exit 2 when ``output`` lies in the cases folder ``root`` or is one of its files."""
    if output is None:
        return
    if Path(os.path.realpath(output)).is_relative_to(root.resolve()):
        fail(f"{output}: refusing to write a report inside the cases folder {root}")
    refuse_inputs(output, (str(p) for p in root.rglob("*") if p.is_file()))


@main.command("conformance")
@click.option(
    "--impl",
    "impl",
    default=DEFAULT_IMPL,
    show_default="amkspec's adapter, reference VM",
    help="The command of the implementation under test (speaks the §9.3 protocol).",
)
@click.option(
    "--cases",
    "cases_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="The cases folder (default: corpus/cases).",
)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write the JSON report here.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("-k", "select", default=None, help="Only cases whose id contains this text.")
@click.option(
    "--level",
    type=click.Choice([lv.value for lv in LEVELS]),
    default=Level.CORE.value,
    show_default=True,
    help="The level the verdict and exit status are for: core (the spec) or strict (amkspec's profile).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=TIMEOUT,
    default=60.0,
    show_default=True,
    help="Seconds an implementation may take to answer one request.",
)
def conformance_command(
    impl: str,
    cases_dir: str | None,
    report_path: str | None,
    junit_path: str | None,
    select: str | None,
    level: str,
    timeout_s: float,
) -> None:
    """Certify the implementation IMPL against the conformance kit (spec §9)."""
    from amkspec.conformance import report
    from amkspec.conformance.cases import CaseError, default_cases_dir
    from amkspec.conformance.kit import run_kit

    root = Path(cases_dir) if cases_dir else default_cases_dir()
    if not root.is_dir():
        fail(f"{root}: no such cases folder")
    _refuse_in_cases(report_path, root)
    _refuse_in_cases(junit_path, root)
    try:
        run = run_kit(impl, root, select=select, level=Level(level), timeout_s=timeout_s)
    except CaseError as exc:
        fail(str(exc))
    if report_path:
        write_output(report_path, report.dumps(run))
    if junit_path:
        write_output(junit_path, report.to_junit(run))
    click.echo(report.summary(run), nl=False)
    sys.exit(EXIT_OK if run.passed else EXIT_REJECTED)
