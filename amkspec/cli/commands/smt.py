"""``amkspec explain`` and ``prove-rules`` (spec §3, the SMT layer)."""

from __future__ import annotations

import click

from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.display import display_program
from amkspec.cli.interrupt import interruptible
from amkspec.cli.options import TIMEOUT
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED
from amkspec.text import escape_line


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the documented JSON form")
@click.option("--dot", "as_dot", is_flag=True, help="print each witness as a Graphviz DOT graph")
@click.option("--svg", "svg", type=click.Path(dir_okay=False), help="draw a witness timeline as SVG here")
@click.option("--png", "png", type=click.Path(dir_okay=False), help="draw a witness timeline as PNG here")
@click.option("--html", "html", type=click.Path(dir_okay=False), help="write an HTML report here")
@click.option("--finding", type=click.IntRange(min=1), help="which finding --svg/--png draw (1-based)")
@clean_errors
def explain(
    file: str,
    as_json: bool,
    as_dot: bool,
    svg: str | None,
    png: str | None,
    html: str | None,
    finding: int | None,
) -> None:
    """Explain a verdict: each rejection witnessed (with a replayed trace) or rule-only; or the proofs."""
    import amkspec.smt.explain as mod  # z3: a missing smt extra is a usage error (cli.base.missing_extra)
    from amkspec.smt.witness import render_dot, render_text

    prog = load_program(file)
    result = interruptible(lambda: mod.explain(prog))
    wrote: list[str] = []
    if svg or png or html:
        from amkspec.viz.export import write_explain

        wrote = write_explain(prog, result.to_dict(prog), file, svg=svg, png=png, html=html, finding=finding)
    if not as_json:
        prog = display_program(prog)
    if as_json:
        echo_json(result.to_dict(prog))
    elif as_dot:
        for f in result.findings:
            if f.witness is not None:
                click.echo(render_dot(prog, f.witness))
    else:
        click.echo(f"{file}: {result.verdict.upper()}")
        for f in result.findings:
            head = f"[{f.status}] {f.code or '-'} {f.clause} {f.kind}"
            click.echo(f"{head}: {escape_line(f.message)}")
            if f.witness is not None:
                click.echo(render_text(prog, f.witness))
        for line in wrote:
            click.echo(f"wrote {line}")
    bad = result.verdict == "rejected" or any(f.status == "witnessed" for f in result.findings)
    raise SystemExit(EXIT_REJECTED if bad else EXIT_OK)


@main.command("prove-rules")
@click.option(
    "--max-tasks",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="prove for every program of at most this many tasks",
)
@click.option(
    "--rules",
    type=click.Choice(["amkspec", "original", "spec-prose"]),
    default="amkspec",
    show_default=True,
    help="which rule set to prove sound",
)
@click.option("--theorem", "names", multiple=True, help="only these theorems (repeatable)")
@click.option(
    "--timeout",
    type=TIMEOUT,
    default=None,
    help="seconds per theorem before giving up (finite, at least 0.001)",
)
@click.option("--json", "as_json", is_flag=True)
def prove_rules(
    max_tasks: int, rules: str, names: tuple[str, ...], timeout: float | None, as_json: bool
) -> None:
    """Bounded soundness theorems: no program passing the rules has a racy or stuck execution."""
    from amkspec.smt.theorems import THEOREMS, prove
    unknown = set(names) - {t.name for t in THEOREMS}
    if unknown:
        fail(
            f"unknown theorem(s): {', '.join(sorted(unknown))}; known: {', '.join(t.name for t in THEOREMS)}"
        )
    results = [
        interruptible(lambda t=t: prove(t, max_tasks, rules, timeout))  # type: ignore[misc]
        for t in THEOREMS if not names or t.name in names
    ]
    if as_json:
        echo_json(
            [
                {
                    "theorem": r.name,
                    "statement": r.statement,
                    "bound": r.bound,
                    "rules": r.rules,
                    "result": _word(r.holds),
                    "seconds": round(r.seconds, 3),
                    "cpu_seconds": round(r.cpu_seconds, 3),
                    "counterexample": r.counterexample or None,
                }
                for r in results
            ]
        )
    else:
        for r in results:
            click.echo(
                f"{r.name:<28} tasks <= {r.bound:<3} rules={r.rules:<10} {_word(r.holds):<14} "
                f"{r.seconds:8.2f} s ({r.cpu_seconds:.2f} s cpu)   {r.statement}"
            )
            if r.counterexample:
                click.echo("  " + r.counterexample.replace("\n", "\n  "))
    raise SystemExit(EXIT_OK if all(r.holds for r in results) else EXIT_REJECTED)


def _word(holds: bool | None) -> str:
    return {True: "PROVED", False: "COUNTEREXAMPLE", None: "UNKNOWN"}[holds]
