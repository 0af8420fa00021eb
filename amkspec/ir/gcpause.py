"""Pausing the cyclic garbage collector around bulk work on a program.

Loading, writing, validating or running a large program allocates millions of small
objects and no reference cycles; the collections those allocations trigger would
otherwise cost as much as the work itself.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the collector for the ``with`` block; its previous state is restored on exit."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
