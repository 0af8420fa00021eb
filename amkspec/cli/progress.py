"""A progress bar on stderr when it is a terminal (tqdm), nothing otherwise."""

from __future__ import annotations

import sys
from typing import Any


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
