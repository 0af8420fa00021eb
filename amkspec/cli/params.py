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


class Timeout(click.ParamType):
    """Seconds: a finite number of at least :data:`MIN_TIMEOUT_S` (``nan``, ``inf`` and sub-millisecond
    values are refused, since Z3 would read them as "no timeout" or fail)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds < MIN_TIMEOUT_S:
            self.fail(f"{value!r} is not a finite number of seconds >= {MIN_TIMEOUT_S}", param, ctx)
        return seconds


TIMEOUT = Timeout()
