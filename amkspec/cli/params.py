"""Option types shared by the commands, each refusing what it cannot honour (exit 2, one line)."""

from __future__ import annotations

import math
from typing import Any

import click

SEED_MAX = 2**64 - 1
"""The largest seed: every seed feeds ``torch.Generator.manual_seed`` or ``random.Random`` (uint64)."""

SEED = click.IntRange(0, SEED_MAX)
"""``--seed``: an integer in [0, 2**64 - 1]."""

MIN_TIMEOUT_S = 0.001
"""The shortest ``--timeout``: Z3 counts whole milliseconds, and 0 ms would mean *no* timeout."""


class FiniteFloatRange(click.FloatRange):
    """A :class:`click.FloatRange` that also refuses ``nan`` (which passes every range comparison)
    and ``±inf``: every float option of amkspec is of this type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        number: float = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


SHARE = FiniteFloatRange(0, 1)
"""A share of trials (``--explore``, ``--probe``): a finite number in [0, 1]."""


class Timeout(FiniteFloatRange):
    """Seconds: a finite number of at least :data:`MIN_TIMEOUT_S` and at most ``max_s`` (``nan``,
    ``inf`` and sub-millisecond values are refused, since Z3 would read them as "no timeout" or fail)."""

    name = "seconds"

    def __init__(self, max_s: float | None = None) -> None:
        super().__init__(MIN_TIMEOUT_S, max_s)


TIMEOUT = Timeout()
"""``--timeout`` of the solver and conformance commands."""

VM_TIMEOUT = Timeout(3600)
"""``--timeout`` of the megakernel VMs' watchdog (``evaluate``, ``search``): at most an hour."""


def executor_options(func: Any) -> Any:
    """``--executor serial|local|ray``, ``--workers N`` and ``--address ADDR`` ("Running at scale")."""
    from amkspec.executors import EXECUTORS

    options = [
        click.option("--executor", type=click.Choice(EXECUTORS), default="serial", show_default=True,
                     help="Where the jobs run: this process, a local process pool, or Ray."),
        click.option("--workers", type=click.IntRange(1, 4096), default=None,
                     help="Parallel workers (local: processes, default the CPU count; ray: the CPUs of a "
                          "local Ray, or the jobs in flight on a cluster)."),
        click.option("--address", default=None, metavar="ADDR",
                     help="Join the Ray cluster at ADDR (host:port, or 'auto'), instead of starting one."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
