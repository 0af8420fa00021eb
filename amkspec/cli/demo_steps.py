"""The steps of ``amkspec demo``: :data:`DEMO_STEPS`, run in order on the examples directory.

Each step prints its own section and returns True when everything in it behaved as expected; the
demo exits 0 only if every step did.

How to add a step (for example "lower the toy models, run them on the ReferenceVM and print
agreement with eager")::

    @demo_step
    def run_toy_models(examples: Path) -> bool:
        click.echo("== toy models on the ReferenceVM ==")
        ...
        return all_agree

Put it in this module: the decorator appends it to :data:`DEMO_STEPS`, after the steps defined
before it. Keep a step fast (seconds) and quiet: one line per item, a clear verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

import amkspec
from amkspec.cli.base import read_program
from amkspec.cli.display import display_program
from amkspec.cli.options import DEFAULT_PROMPT, parse_prompt_ids
from amkspec.cli.verdicts import verdict, verdict_line
from amkspec.ir import AmkspecError, DType, ScheduleConfig
from amkspec.ir.summary import one_line
from amkspec.text import escape_line

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


@demo_step
def run_toy_models(examples: Path) -> bool:
    """Lower toy and toy-2L, validate, decode a few steps on the ReferenceVM, compare with eager."""
    from amkspec.lower import lower
    from amkspec.lower.decode import greedy_decode

    click.echo("== toy models: lower (N_tile 64, load_balance SMs, graph_color pages), validate, "
               "decode on the ReferenceVM vs eager ==")
    ok = True
    config = ScheduleConfig(tiling={"gemv": {"N_tile": 64}})
    for name, dtype in (("toy", DType.F32), ("toy-2L", DType.F32), ("toy-2L", DType.BF16)):
        prog = lower(name, "rtx5090", config, pos=0, dtype=dtype)
        result = amkspec.validate(prog)
        run = greedy_decode(name, parse_prompt_ids(DEFAULT_PROMPT), 4, config=config, target="rtx5090",
                            dtype=dtype)
        agree = sum(s.vm_next == s.eager_next for s in run.steps)
        ok = ok and result.ok and run.agree
        click.echo(f"{name} {dtype.name}: {len(prog.tasks)} tasks, {'valid' if result.ok else 'REJECTED'}, "
                   f"scratch {prog.total_scratch_bytes()} B; {len(run.steps)} launches, "
                   f"generated {run.generated[0]}, argmax agreement {agree}/{len(run.steps)}, "
                   f"max abs err {run.max_abs_err:.3g} -> {'ok' if run.agree else 'DISAGREE'}")
    return ok
