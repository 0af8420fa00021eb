"""The CPU build under ThreadSanitizer and AddressSanitizer+UBSan (spec §8.6).

Each sanitized build is a standalone driver executable (``vm_cuda/cpu_driver.cpp``) that runs an
image file written by the packer, so no sanitizer runtime has to be preloaded into Python. On a
few valid programs (bundled, the original's fixture, hypothesis-drawn) and a forced deadlock the
run must be clean and, for the valid ones, equal the ReferenceVM; a racy program forced past the
validator shows that TSan does see the kernel's races.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings

from amkspec import load
from amkspec.ir import BufferKind, MegakernelProgram
from amkspec.ir.graph import writers_by_buffer
from amkspec.programs.small import scale_chain
from amkspec.programs.strategies import valid_programs
from amkspec.vm import ReferenceVM
from amkspec.vm.binding import bind
from amkspec.vm.operands import operands
from tests.conftest import EXAMPLES, FIXTURES
from tests.vm_cuda.test_watchdog import _cycle
from vm_cuda.compare import compare_outputs
from vm_cuda.cpu import CPU_MAX_BLOCKS, run_driver
from vm_cuda.pack import Packer
from vm_cuda.status import RunStatus, decode

VARIANTS = ("tsan", "asan")
REPORTS = ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def _run(
    program: MegakernelProgram,
    variant: str,
    weights: Any,
    inputs: Any,
    timeout_s: float = 30.0,
    unsafe: bool = False,
) -> tuple[dict[str, torch.Tensor], RunStatus, str]:
    bound = bind(program, weights, inputs, {}, set(writers_by_buffer(program)))
    image = Packer(program, max_blocks=CPU_MAX_BLOCKS, _unsafe_skip_validation=unsafe).image(
        bound, timeout_s=timeout_s
    )
    data, proc = run_driver(image, variant)
    report = proc.stderr
    assert proc.returncode == 0 or any(r in report for r in REPORTS), (proc.returncode, report[-2000:])
    if proc.returncode != 0:
        return {}, RunStatus("FAULT", "sanitizer"), report
    out = {
        b.name: image.tensor(k, data)
        for k, b in enumerate(program.buffers)
        if b.kind in (BufferKind.IO_OUTPUT, BufferKind.KV_CACHE)
    }
    return out, decode(data, program), report


def _clean_and_equal(program: MegakernelProgram, variant: str, weights: Any, inputs: Any) -> None:
    out, status, report = _run(program, variant, weights, inputs)
    assert not any(r in report for r in REPORTS), report[-4000:]
    assert status.kind == "OK", status.detail
    assert compare_outputs(out, ReferenceVM(program).run(weights, inputs)) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_bundled_and_fixture_programs_run_clean(cxx: str, variant: str) -> None:
    program = load(EXAMPLES / "decoder_layer.json")
    _clean_and_equal(program, variant, *operands(program))
    fixture = load(FIXTURES / "toy1L__default.json")
    with np.load(FIXTURES / "toy-1L.weights.npz") as z:
        weights = {k: z[k] for k in z.files}
    with np.load(FIXTURES / "toy1L__default.inputs.npz") as z:
        inputs = {k.split("__", 1)[1]: z[k] for k in z.files if k.startswith("s0__")}
    _clean_and_equal(fixture, variant, weights, inputs)


@pytest.mark.parametrize("variant", VARIANTS)
def test_fuzzed_valid_programs_run_clean(cxx: str, variant: str) -> None:
    @settings(max_examples=4, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(valid_programs(max_tasks=12))
    def check(program: MegakernelProgram) -> None:
        _clean_and_equal(program, variant, *operands(program))

    check()


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_watchdog_path_runs_clean(cxx: str, variant: str) -> None:
    _, status, report = _run(_cycle(), variant, {}, {"x": torch.ones(1, 4)}, timeout_s=0.3, unsafe=True)
    assert not any(r in report for r in REPORTS), report[-4000:]
    assert status.kind == "TIMEOUT"


def test_tsan_sees_the_race_of_a_program_forced_past_the_validator(cxx: str) -> None:
    racy = scale_chain(scale_waits=False)  # the second MUL reads y without waiting for its writer
    _, _, report = _run(racy, "tsan", {}, {"x": torch.ones(1, 4)}, unsafe=True)
    assert "WARNING: ThreadSanitizer: data race" in report


def test_asan_sees_an_out_of_bounds_write_of_a_corrupted_image(cxx: str) -> None:
    """The ASan driver is really checking: a buffer record claiming more elements than its storage
    (which no validated program produces) makes the COPY write past the end of the image."""
    from amkspec.ir import DType, InstructionKind, ProgramBuilder
    from vm_cuda.pack import unpack

    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    b.add_task(InstructionKind.COPY, [x], [z])
    program = b.build()
    image = Packer(program, max_blocks=1).image(bind(program, {}, {"x": torch.ones(1, 4)}, {}, {z}))
    table = unpack(image.data).buffers
    for rec in table:
        rec["shape"][1] = rec["numel"] = 4096
    _, proc = run_driver(image, "asan")
    assert proc.returncode != 0 and "ERROR: AddressSanitizer" in proc.stderr, proc.stderr[-2000:]
