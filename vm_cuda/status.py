"""The result of one megakernel launch (spec §8.5): OK, TIMEOUT or FAULT, and the errors.

The kernel writes ``amk_status_t``; :func:`decode` turns it into a :class:`RunStatus`
whose ``detail`` names program ids (which SM waited on which counter at which value,
or which task faulted with which ``AMK_FAULT_*`` code, named from ``ops/common.cuh``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

import attrs
import numpy as np

from amkspec.ir import MegakernelProgram
from amkspec.vm.errors import ExecutionError
from vm_cuda import layout
from vm_cuda.build import SOURCE_DIR

Kind = Literal["OK", "TIMEOUT", "FAULT"]


@attrs.frozen
class RunStatus:
    """One launch's outcome; the fields past ``detail`` are program ids (None where not applicable)."""

    kind: Kind
    detail: str = ""
    sm: int | None = None
    task: int | None = None
    counter: int | None = None
    value: int | None = None
    threshold: int | None = None
    fault_code: int | None = None
    executed: int = 0


class KernelTimeout(ExecutionError):
    """The watchdog stopped a launch: a block waited longer than ``timeout_s`` (``status`` says where)."""

    def __init__(self, status: RunStatus) -> None:
        super().__init__(f"megakernel TIMEOUT: {status.detail}")
        self.status = status


class KernelFault(ExecutionError):
    """An opcode could not use its operands, or the launch did not complete (``status`` says which task)."""

    def __init__(self, status: RunStatus) -> None:
        super().__init__(f"megakernel FAULT: {status.detail}")
        self.status = status


def host_deadline_detail(deadline_s: float | None, executed: int, total: int) -> str:
    """What a launch the host stopped at its deadline reports."""
    limit = f"{deadline_s:g} s" if deadline_s is not None else "its deadline"
    return (
        f"the launch passed the host deadline of {limit}; the host stopped it after {executed} of {total} "
        "tasks"
    )


@cache
def fault_names() -> dict[int, str]:
    """``AMK_FAULT_*`` code → name, read from the opcode headers (where they are defined)."""
    names: dict[int, str] = {}
    for path in sorted((SOURCE_DIR / "ops").glob("*.cuh")):
        for name, code in re.findall(r"#define\s+AMK_FAULT_(\w+)\s+(\d+)", path.read_text()):
            names.setdefault(int(code), name)
    return names


def read_status(data: np.ndarray) -> np.void:
    """The ``amk_status_t`` record of an image."""
    header = data[: layout.HEADER.itemsize].view(layout.HEADER)[0]
    off = int(header["status_off"])
    return data[off : off + layout.STATUS.itemsize].view(layout.STATUS)[0]


def decode(data: np.ndarray, program: MegakernelProgram) -> RunStatus:
    """The :class:`RunStatus` of a launched image of ``program``."""
    return decode_record(read_status(data), program)


def decode_record(st: np.void, program: MegakernelProgram, deadline_s: float | None = None) -> RunStatus:
    """The :class:`RunStatus` of a launch of ``program`` whose ``amk_status_t`` is ``st``
    (``deadline_s``: the host deadline, named when the host stopped the launch)."""
    abort, executed = int(st["abort"]), int(st["executed"])
    if abort == layout.ABORT_CODES["HOST"]:
        return RunStatus("TIMEOUT", host_deadline_detail(deadline_s, executed, len(program.tasks)),
                         executed=executed)
    tasks, counters = program.tasks, program.counters
    if abort == layout.ABORT_CODES["TIMEOUT"]:
        task, counter = tasks[int(st["instruction"])], counters[int(st["counter"])]
        value, threshold, sm = int(st["value"]), int(st["threshold"]), int(st["sm"])
        detail = (
            f"SM {sm} waited on counter {counter.id} at value {value} (needs >= {threshold}) "
            f"before task {task.describe()}"
        )
        return RunStatus("TIMEOUT", detail, sm, task.id, counter.id, value, threshold, None, executed)
    if abort == layout.ABORT_CODES["FAULT"]:
        index, code, sm = int(st["instruction"]), int(st["fault_code"]), int(st["sm"])
        task = tasks[index]
        name = fault_names().get(code, "UNKNOWN")
        detail = f"task {task.describe()} ({task.op.name}) on SM {sm} faulted with AMK_FAULT_{name} ({code})"
        return RunStatus("FAULT", detail, sm, task.id, None, None, None, code, executed)
    if executed != len(tasks):
        return RunStatus(
            "FAULT", f"the launch ended after {executed} of {len(tasks)} tasks", executed=executed
        )
    return RunStatus("OK", f"{executed} tasks", executed=executed)
