"""``amkspec info``, ``fmt`` and ``schema``: the IR-level commands (spec §1, §6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.display import display_program
from amkspec.cli.files import read_bytes_file, write_output
from amkspec.cli.options import DEQUANTIZE_HELP, MODEL_NAMES, chosen_model, dequantized, model_label
from amkspec.cli.verdicts import verdict, verdict_line
from amkspec.exit_codes import EXIT_REJECTED
from amkspec.ir import MegakernelProgram, dumps
from amkspec.ir.schema import program_schema
from amkspec.ir.summary import summarize


def _info_lines(path: str, s: dict[str, Any]) -> list[str]:
    target = f"{s['target']} ({s['num_sms']} SMs)" if s["target"] else "none"
    bound = f"{s['bandwidth_bound_us']} us" if s["bandwidth_bound_us"] is not None else "n/a"
    ops = ", ".join(f"{name} {n}" for name, n in s["ops"].items()) or "none"
    return [
        f"program:       {path}",
        f"versions:      ir {s['ir_version']}, abi {s['abi_version']}",
        f"model:         {s['model'] or 'n/a'}",
        f"target:        {target}",
        f"tasks:         {s['tasks']}",
        f"buffers:       {s['buffers']}",
        f"counters:      {s['counters']}",
        f"edges:         {s['edges']}",
        f"acyclic:       {'yes' if s['acyclic'] else 'no'}",
        f"weight bytes:  {s['weight_bytes']}",
        f"scratch bytes: {s['scratch_bytes']}{' (paged)' if s['paged'] else ''}",
        f"decode floor:  {bound}",
        f"sm assigned:   {s['sm_assigned']} of {s['tasks']} tasks",
        f"ops:           {ops}",
    ]


def program_or_model(file: str | None, checkpoint: str | None, dequantize: bool
                     ) -> tuple[MegakernelProgram, str]:
    """The program a file holds, or the decode step ``amkspec lower`` makes of a model (a name that
    is no existing file, or ``--checkpoint PATH``), and how to call it."""
    if file is not None and checkpoint is None and (Path(file).exists() or file not in MODEL_NAMES.choices):
        if dequantize:
            fail("--dequantize applies to a model, not to a program file")
        return load_program(file), file
    from amkspec.lower import lower

    model = chosen_model(file, checkpoint)
    return lower(dequantized(model, dequantize)), f"{model_label(model)} (amkspec lower)"


@main.command()
@click.argument("file", type=click.Path(), required=False)
@click.option("--checkpoint", type=click.Path(), metavar="PATH",
              help="Summarise the decode step of this checkpoint (as `amkspec lower` makes it).")
@click.option("--dequantize", is_flag=True, help=DEQUANTIZE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--svg", type=click.Path(dir_okay=False), help="Draw the task graph as SVG here.")
@click.option("--png", type=click.Path(dir_okay=False), help="Draw the task graph as PNG here.")
@click.option("--highlight", metavar="N|CODE", help="Outline the tasks of error N or of code CODE.")
@click.option("--layer", type=click.IntRange(0), help="Draw decoder layer N only (tiles as one box).")
@click.option("--around", type=click.IntRange(0), metavar="TASK",
              help="Draw task TASK and its neighbours within two edges only (tiles as one box).")
@clean_errors
def info(file: str | None, checkpoint: str | None, dequantize: bool, as_json: bool, svg: str | None,
         png: str | None, highlight: str | None, layer: int | None, around: int | None) -> None:
    """Summarise a program FILE (or a model's decode step: a MODEL name or --checkpoint): sizes,
    edges, memory, target, opcodes and validity.

    Exits 0 once the file loads (whatever the verdict), 2 if it cannot be loaded.
    """
    prog, name = program_or_model(file, checkpoint, dequantize)
    for option, value in (("--highlight", highlight), ("--layer", layer), ("--around", around)):
        if value is not None and not (svg or png):
            fail(f"{option} needs --svg or --png")
    if layer is not None and around is not None:
        fail("give --layer or --around, not both")
    file = name
    from amkspec.proofs import validate

    result = validate(prog)  # once, for the highlight and the verdict
    if svg or png:
        from amkspec.viz.export import write_graph

        lines = write_graph(prog, file, svg=svg, png=png, highlight=highlight, layer=layer, around=around,
                            validation=result)
        for line in lines:
            click.echo(f"wrote {line}", err=as_json)
    v = verdict(prog, escaped=not as_json, validation=result)
    summary = summarize(prog if as_json else display_program(prog))
    if as_json:
        echo_json({"file": file, **summary, "validation": v})
        return
    for line in _info_lines(file, summary):
        click.echo(line)
    click.echo(verdict_line(v))
    for err in v["first_errors"]:
        click.echo(f"  error: {err}")


def canonical_text(prog: MegakernelProgram) -> str:
    """What ``amkspec fmt`` writes: the canonical JSON plus one final newline (spec §6)."""
    return dumps(prog) + "\n"


def _read_text(path: str) -> str:
    return read_bytes_file(path).decode("utf-8", errors="replace")


@main.command()
@click.argument("file", type=click.Path())
@click.option("-o", "--output", type=click.Path(), help="Write here instead of stdout.")
@click.option("--check", is_flag=True, help="Exit 1 if FILE is not canonical; write nothing.")
@clean_errors
def fmt(file: str, output: str | None, check: bool) -> None:
    """Rewrite a program in canonical form (key order, indent 2, enums by name; spec §6).

    Unknown fields are kept. With --check, a file is canonical when its text equals the
    canonical text, with or without the final newline.
    """
    prog = load_program(file)
    text = canonical_text(prog)
    if check:
        if _read_text(file) not in (text, text[:-1]):
            fail(f"{file}: not in canonical form (run 'amkspec fmt {file} -o {file}')", EXIT_REJECTED)
        return
    if output is None:
        click.echo(text, nl=False)
    else:
        write_output(output, text)  # in place is allowed: the write is atomic


@main.command()
@click.option("-o", "--output", type=click.Path(), help="Write here instead of stdout.")
@click.option("--config", "of_config", is_flag=True, help="The schema of a ScheduleConfig document instead.")
@clean_errors
def schema(output: str | None, of_config: bool) -> None:
    """Print the JSON Schema (Draft 2020-12) of the program format, generated from the model.

    With --config: of a ScheduleConfig document (``amkspec evaluate --config``), generated from
    the knob table of :mod:`amkspec.lower.knobs`.
    """
    if of_config:
        from amkspec.lower.knobs import config_schema

        document = config_schema()
    else:
        document = program_schema()
    text = json.dumps(document, indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_output(output, text)
