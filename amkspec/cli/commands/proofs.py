"""``amkspec validate FILE... [--json]``: judge programs against spec §3.

Prints each file's report grouped by spec section (or one JSON document with a
result per file). Exit 0 when every file is valid, 1 when any is rejected, 2 when
any file cannot be read or loaded (that file is reported on stderr, the others are
still judged).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from amkspec.cli.base import echo_json, load_error, main, read_program
from amkspec.cli.display import display_result
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_UNUSABLE, error_line
from amkspec.ir import AmkspecError


def _judge(path: str, as_json: bool) -> dict[str, Any]:
    from amkspec.proofs import validate

    try:
        prog = read_program(path)
    except AmkspecError as exc:
        return {"file": path, "error": load_error(exc)}
    except OSError as exc:
        return {"file": path, "error": exc.strerror or str(exc)}
    result = validate(prog)
    if not as_json:
        result = display_result(result)
    return {"file": path, "report": result.report(), **result.to_dict()}


@main.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document with a result per file.")
def validate_command(files: tuple[str, ...], as_json: bool) -> None:
    """Validate FILE... (spec §3): exit 0 valid, 1 rejected, 2 unreadable."""
    results = [_judge(path, as_json) for path in files]
    for r in results:
        if "error" in r:
            click.echo(error_line(f"{r['file']}: {r['error']}"), err=True)
    if as_json:
        echo_json({"files": [{k: v for k, v in r.items() if k != "report"} for r in results]})
    else:
        for r in results:
            if "report" in r:
                click.echo(f"{r['file']}: {r['report']}")
    if any("error" in r for r in results):
        sys.exit(EXIT_UNUSABLE)
    sys.exit(EXIT_OK if all(r["ok"] for r in results) else EXIT_REJECTED)
