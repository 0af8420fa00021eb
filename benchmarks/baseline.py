"""The real original implementation as a benchmark baseline, run in the same process.

``../shared/third_party/AutoMegaKernel`` (a verbatim subset of the original: its validator,
JSON reader and ReferenceVM) is put on ``sys.path`` by this module only; amkspec itself never
imports it. Programs reach the original through their JSON text (amkspec writes the original's
format byte for byte), so both sides check exactly the same program.

Every benchmark takes ``--baseline PATH`` (default: that folder, when present) and prints
"original: not available (...)" instead of a number when it is missing or cannot run a program.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = ROOT.parent / "shared" / "third_party" / "AutoMegaKernel"
RACE_CAP = 8000
"""The original skips its race and page checks above this many tasks (OPS_FACTS §12)."""


def add_baseline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline", type=Path, default=DEFAULT_BASELINE if DEFAULT_BASELINE.is_dir() else None,
        help="folder of the original implementation (default: %(default)s)",
    )


class Unavailable(Exception):
    """The original cannot measure this program; the message says why (printed instead of a number)."""


class Baseline:
    """The original's ``schedule.ir`` (and, on demand, ``vm.reference_vm``) loaded from ``path``."""

    def __init__(self, path: Path) -> None:
        if not (path / "schedule" / "ir.py").is_file():
            raise Unavailable(f"no original implementation at {path}")
        sys.path.insert(0, str(path))
        import schedule.ir as ir

        self.path = path
        self.ir: ModuleType = ir

    def program(self, text: str) -> Any:
        """The original's MegakernelProgram for a program's JSON text."""
        try:
            return self.ir.MegakernelProgram.from_json(text)
        except Exception as exc:  # noqa: BLE001 - any failure of the original is reported, not raised
            raise Unavailable(f"its reader fails: {type(exc).__name__}: {exc}") from None

    def validator(self, text: str) -> Callable[[], object]:
        """A call of the original's ``validate()`` on the program, checked once to run at all."""
        prog = self.program(text)
        if len(prog.tasks) > RACE_CAP:
            raise Unavailable(f"skips its race checks above {RACE_CAP} tasks, so no like-for-like time")
        try:
            self.ir.validate(prog)
        except Exception as exc:  # noqa: BLE001
            raise Unavailable(f"its validate() crashes: {type(exc).__name__}: {exc}") from None
        return lambda: self.ir.validate(prog)

    def reference_vm(self) -> ModuleType:
        import vm.reference_vm as reference_vm

        return reference_vm


def open_baseline(path: Path | None) -> tuple[Baseline | None, str]:
    """The baseline, or None with the reason it is missing."""
    if path is None:
        return None, "original: not available (no --baseline and no ../shared/third_party/AutoMegaKernel)"
    try:
        return Baseline(path), f"original: {path}"
    except Unavailable as exc:
        return None, f"original: not available ({exc})"


def ratio(ours: float, theirs: float | None) -> str:
    """``theirs / ours`` as a speed-up, or ``-`` without a baseline time."""
    return "-" if theirs is None else f"{theirs / ours:.2f}x"
