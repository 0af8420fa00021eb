"""Progress on stderr: a bar when it is a terminal (tqdm); otherwise nothing (:class:`Bar`) or one line per
search trial (:class:`TrialProgress`)."""

from __future__ import annotations

import sys
from typing import Any

import click


class Bar:
    """``update()`` once per unit of ``total``; ``close()`` when done. Silent unless stderr is a TTY."""

    def __init__(self, total: int, desc: str, unit: str) -> None:
        self.bar: Any = None
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                            leave=False)

    def update(self, *_: Any) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class TrialProgress:
    """A tqdm bar on a terminal, otherwise one plain line per trial (both on stderr). Trials are
    numbered as in ``results.tsv`` and the JSON (trial 0 is the default config)."""

    def __init__(self, total: int, done: int, quiet: bool) -> None:
        self.quiet = quiet
        self.total = total
        self.done = done
        self.bar: Any = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, unit="trial", file=sys.stderr, dynamic_ncols=True)

    def __call__(self, trial: Any, incumbent: Any) -> None:
        self.done += 1
        best = incumbent.verdict.latency_us if incumbent is not None else None
        if self.bar is not None:
            self.bar.set_postfix_str(f"best {best} us, trial {trial.trial} {trial.status}")
            self.bar.update(1)
        elif not self.quiet:
            lat = trial.verdict.latency_us
            click.echo(f"trial {trial.trial} {trial.verdict.schedule_id} {trial.status:<8} "
                       f"{'-' if lat is None else f'{lat} us'} ({trial.source} {trial.knob}); best {best} us "
                       f"[{self.done} of {self.total} done]", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
