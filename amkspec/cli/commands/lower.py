"""``amkspec lower``: one decode step of a model as a program (the lowering guide)."""

from __future__ import annotations

from pathlib import Path

import click

import amkspec
from amkspec.cli.base import clean_errors, main
from amkspec.cli.files import read_config, refuse_inputs, write_output
from amkspec.cli.options import DTYPES, model_argument, quant_options, quant_spec
from amkspec.ir import TARGETS, DType

NO_CONFIG_NOTE = (
    "amkspec: note: no --config: the original's auto tiling (GEMV tiles of 32 columns, no fusion, SM "
    "placement or pages); evaluate, search and propose start from the default config instead: "
    "'amkspec propose MODEL --target T' prints it and --config takes that output"
)
"""Why ``lower`` without ``--config`` gives another program than ``evaluate``'s default (stderr)."""


@main.command("lower")
@model_argument()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="ScheduleConfig JSON, a "
              "program (its config) or 'amkspec propose' output (default: the original's auto tiling, "
              "not the default config evaluate and search start from).")
@click.option("--pos", type=int, default=0, show_default=True, help="Absolute position of the token.")
@click.option("--target", type=click.Choice(sorted(TARGETS)), default=None, help="GPU target record.")
@click.option("--dtype", type=DTYPES, default="F32", show_default=True)
@click.option("--batch", type=int, default=1, show_default=True, help="Sequences decoded together.")
@click.option("--compat", is_flag=True, help="Record but do not consume sm_assignment/page_allocation.")
@quant_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
@clean_errors
def lower_cmd(model: str | Path, config_path: str | None, pos: int, target: str | None, dtype: str,
              batch: int, compat: bool, quant: str | None, group: int, output: str | None) -> None:
    """Lower one decode step of MODEL (or --checkpoint) into a program (the lowering guide)."""
    from amkspec.lower import lower

    if output:
        refuse_inputs(output, [config_path])
    prog = lower(model, target, read_config(config_path), pos=pos, dtype=DType[dtype], B=batch,
                 quant=quant_spec(quant, group), compat=compat)
    if config_path is None:
        click.echo(NO_CONFIG_NOTE, err=True)
    if output:
        write_output(output, amkspec.dumps(prog) + "\n", [config_path])
    else:
        click.echo(amkspec.dumps(prog))
