"""``amkspec replay``: follow an event trace (a witness) on the ReferenceVM with shadow state (spec §2)."""

from __future__ import annotations

from typing import Any

import click

from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.display import display_program
from amkspec.cli.files import read_json_file, read_npz
from amkspec.cli.params import SEED
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED
from amkspec.ir import MegakernelProgram
from amkspec.text import count, no_such_finding


def _arrays(path: str | None) -> dict[str, Any]:
    """Named arrays from an ``.npz`` file or a JSON object of nested lists."""
    if path is None:
        return {}
    if path.endswith(".npz"):
        return read_npz(path)
    doc = read_json_file(path)
    if not isinstance(doc, dict):
        fail(f"{path}: expected a JSON object of named arrays")
    return doc


def _witness(path: str, findings: list[Any], finding: int | None) -> Any:
    """The witness of finding ``finding`` (1-based over all findings, as ``explain --finding``
    counts them), or of the first finding that has one."""
    if finding is None:
        witnessed = [f["witness"] for f in findings if isinstance(f, dict) and f.get("witness")]
        if not witnessed:
            fail(f"{path}: none of its {count(len(findings), 'finding')} has a witness to replay")
        return witnessed[0]
    if finding > len(findings):
        fail(f"{path}: " + no_such_finding(finding, f"it has {count(len(findings), 'finding')}"))
    chosen = findings[finding - 1]
    if not isinstance(chosen, dict) or not chosen.get("witness"):
        status = chosen.get("status") if isinstance(chosen, dict) else "not an object"
        fail(f"{path}: finding {finding} ({status}) has no witness to replay")
    return chosen["witness"]


def _trace(path: str, finding: int | None) -> Any:
    """The events of a trace file: a list of events, a witness, or ``explain --json`` output."""
    doc = read_json_file(path)
    if isinstance(doc, dict) and "findings" not in doc and "events" not in doc:
        fail(f"{path}: not a trace: expected a list of events, a witness object with 'events', "
             "or the output of explain --json")
    if isinstance(doc, dict) and "findings" in doc:
        if not isinstance(doc["findings"], list):
            fail(f"{path}: 'findings' must be a list")
        return _witness(path, doc["findings"], finding)
    return doc


def _report(prog: MegakernelProgram, result: Any, as_json: bool, deadlock: str | None) -> int:
    report = result.report if result is not None else None
    lines = report.describe(prog) if report is not None else []
    if as_json:
        echo_json({
            "order": result.stats.order if result is not None else [],
            **(report.to_dict() if report is not None else {"stale_reads": [], "conflicts": []}),
            "deadlock": deadlock,
        })
    else:
        for line in lines:
            click.echo(line)
        if deadlock:
            click.echo(deadlock)
        if not lines and not deadlock:
            click.echo("every read saw complete data and no writes overlapped")
    return EXIT_REJECTED if lines or deadlock else EXIT_OK


@main.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="weights by source (.npz or JSON)")
@click.option("--inputs", type=click.Path(dir_okay=False), help="IO inputs by name (.npz or JSON)")
@click.option("--finding", type=click.IntRange(min=1),
              help="which finding of explain --json to replay (1-based, as explain numbers them; "
                   "default: the first with a witness)")
@click.option("--seed", type=SEED, default=0, show_default=True, help="seed of synthetic weights, inputs")
@click.option("--no-finish", is_flag=True, help="stop after the trace instead of finishing in list order")
@click.option("--json", "as_json", is_flag=True, help="print the stale reads and conflicts as JSON")
@clean_errors
def replay(
    program: str, trace: str, weights: str | None, inputs: str | None, finding: int | None, seed: int,
    no_finish: bool, as_json: bool,
) -> None:
    """Replay TRACE on PROGRAM with shadow state; exit 1 if a read was stale, writes overlapped or it
    deadlocked. Missing weights and inputs are synthesised; PROGRAM need not pass validate()."""
    from amkspec.vm import DeadlockError, replay_trace

    prog = load_program(program)
    if not as_json:
        prog = display_program(prog)
    events = _trace(trace, finding)
    try:
        result = replay_trace(prog, events, weights=_arrays(weights), inputs=_arrays(inputs), seed=seed,
                              finish=not no_finish)
        deadlock = None
    except DeadlockError as exc:
        result, deadlock = None, str(exc)
    raise SystemExit(_report(prog, result, as_json, deadlock))
