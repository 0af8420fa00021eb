"""The watchdog and the run status (spec §8.5): TIMEOUT within 2 s, FAULT naming the task, OK."""

from __future__ import annotations

import time

import pytest
import torch

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait
from amkspec.vm import ExecutionError, ReferenceVM
from vm_cuda import KernelFault, KernelTimeout, MegakernelVM

K = InstructionKind
X = {"x": torch.arange(4, dtype=torch.float32).reshape(1, 4)}


def _chain(threshold: int | None = None) -> MegakernelProgram:
    """x → COPY → y → COPY → z; ``threshold`` overrides the second task's wait (2 never comes)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.ACTIVATION, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    first = b.add_task(K.COPY, [x], [y], label="first")
    wait = b.after(first)
    b.add_task(K.COPY, [y], [z], waits=[Wait(wait.counter, threshold or wait.threshold)], label="second")
    return b.build()


def _cycle() -> MegakernelProgram:
    """Two tasks on two SMs, each waiting for the other (a cross-block deadlock)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    c0, c1 = b.new_counter("a"), b.new_counter("b")
    b.add_task(K.COPY, [x], [z], out_counter=c0, waits=[Wait(c1, 1)], sm=0, label="a")
    b.add_task(K.NOP, [], [], out_counter=c1, waits=[Wait(c0, 1)], sm=1, label="b")
    return b.build()


@pytest.mark.parametrize("make", [lambda: _chain(threshold=2), _cycle], ids=["unmet-threshold", "cycle"])
def test_a_forced_deadlock_times_out_within_two_seconds_and_the_process_stays_usable(make) -> None:
    program = make()
    vm = MegakernelVM(program, "cpu", timeout_s=0.5, _unsafe_skip_validation=True)
    start = time.perf_counter()
    with pytest.raises(KernelTimeout) as info:
        vm.run({}, X)
    assert time.perf_counter() - start <= 2.0
    status = info.value.status
    assert vm.last_status == status and status.kind == "TIMEOUT"
    waiting = next(t for t in program.tasks if t.id == status.task)
    wait = next(w for w in waiting.waits if w.counter == status.counter)
    assert status.threshold == wait.threshold and status.value is not None and status.value < wait.threshold
    assert f"SM {status.sm} waited on counter {status.counter} at value {status.value}" in status.detail
    assert isinstance(info.value, ExecutionError)
    fine = MegakernelVM(_chain(), "cpu", timeout_s=0.5)  # the process and the library still work
    assert torch.equal(fine.run({}, X)["z"], X["x"]) and fine.last_status is not None
    assert fine.last_status.kind == "OK"


def test_a_fault_names_the_task_and_the_fault_code() -> None:
    b = ProgramBuilder()
    ids = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,))
    table = b.new_buffer("table", BufferKind.WEIGHT, DType.F32, (3, 4))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(K.EMBED, [ids, table], [out], params={"hidden": 4}, label="embed")
    program = b.build()
    weights, inputs = {"table": torch.ones(3, 4)}, {"ids": torch.tensor([7], dtype=torch.int32)}
    with pytest.raises(ExecutionError):
        ReferenceVM(program).run(weights, inputs)  # the id is data: no validator can see it
    vm = MegakernelVM(program, "cpu")
    with pytest.raises(KernelFault) as info:
        vm.run(weights, inputs)
    status = info.value.status
    assert status.kind == "FAULT" and status.task == program.tasks[0].id and status.fault_code
    assert "embed" in status.detail and "AMK_FAULT_" in status.detail
