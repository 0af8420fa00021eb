"""Ctrl-C during a Z3 query: stop the query and exit 130 (docs/guides/robustness.md).

Z3 catches SIGINT itself during ``check()`` and answers "unknown", so Ctrl-C would be
reported as an UNKNOWN result and the command would go on. :func:`interruptible` runs the
query in a worker thread with Z3's own handler off: Python's KeyboardInterrupt reaches the
main thread, which interrupts Z3 and re-raises, and the CLI's error boundary exits 130.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_POLL_S = 0.05
_STOP_S = 60.0
"""How long to keep interrupting Z3 until the worker ends (it checks for cancellation often)."""


def interruptible(call: Callable[[], T]) -> T:
    """``call()`` in a worker thread; Ctrl-C interrupts Z3 and raises KeyboardInterrupt here.

    The main thread waits on an Event, not ``Thread.join``: a join interrupted by Ctrl-C can
    mark a still-running thread as stopped (CPython before 3.13).
    """
    import z3

    z3.set_param("ctrl_c", False)
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="amkspec-z3", daemon=True)
    worker.start()
    try:
        while not done.wait(_POLL_S):
            pass
    except KeyboardInterrupt:
        _stop(done)
        raise
    if "error" in box:
        raise box["error"]
    result: T = box["result"]
    return result


def _stop(done: threading.Event) -> None:
    """Interrupt Z3 until the worker is done: the Z3 context must not be shared by two threads."""
    import z3

    waited = 0.0
    while not done.is_set() and waited < _STOP_S:
        z3.main_ctx().interrupt()
        done.wait(_POLL_S)
        waited += _POLL_S
