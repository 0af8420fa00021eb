"""The built cubin's machine code (spec §8.7, kernel design), for the default block size and the
largest: the kernel's registers fit one block on an SM's register file; the GEMV hot loop of every
weight kind issues 16-byte global loads (groups of four, pipelined: four in flight per lane, at the
default size; groups of two at 1024 threads), reads x from shared memory four floats at a time and
has no dtype switch; and no local-memory traffic (spills) — at every size for floating-point
weights, at the default size for int8/int4 (at 64 registers per thread their loop spills a few
words: a known limit, gpu.md). ``cuobjdump`` / ``nvdisasm`` come from NVIDIA's pip wheels (the
test extra)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from vm_cuda import sass
from vm_cuda.build import DEFAULT_THREADS_PER_BLOCK, build_cubin, cuda_tool, nvcc

pytestmark = pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed (set $NVCC or $CUDA_HOME)")
ARCH = "sm_90"
SIZES = (DEFAULT_THREADS_PER_BLOCK, 1024)
REGISTERS_PER_SM = 65536  # every target's (amkspec.ir.TARGETS regs_per_sm)
UNROLL = {DEFAULT_THREADS_PER_BLOCK: 4, 1024: 2}  # AMK_GEMV_UNROLL: 2 where registers are 64
GEMV = {  # name in the listing: _Z12amk_gemv_runILi<DT>ELi<QUANT>ELi<R>E... (decode: R = 1)
    "f32": "ILi0ELi0ELi1E", "f16": "ILi1ELi0ELi1E", "bf16": "ILi2ELi0ELi1E",
    "int8": "ILi0ELi1ELi1E", "int4": "ILi0ELi2ELi1E",
}


@cache
def listing(threads: int) -> tuple[Path, dict[str, list[str]]]:
    cubin, _ = build_cubin(ARCH, threads)
    return cubin, sass.functions(cubin)


def test_the_binary_tools_are_installed() -> None:
    wheels = "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"
    assert cuda_tool("cuobjdump") and cuda_tool("nvdisasm"), wheels


@pytest.mark.parametrize("threads", SIZES)
def test_registers_fit_one_block_per_sm(threads: int) -> None:
    usage = sass.resources(listing(threads)[0])
    assert usage["REG"] * threads <= REGISTERS_PER_SM and usage["REG"] <= 255, usage
    print(f"{ARCH} T={threads}: {usage}")


@pytest.mark.parametrize("kind", sorted(GEMV))
@pytest.mark.parametrize("threads", SIZES)
def test_the_gemv_hot_loop(threads: int, kind: str) -> None:
    _, fns = listing(threads)
    name = next(n for n in fns if "amk_gemv_run" in n and GEMV[kind] in n)
    loop = sass.hot_loop(fns[name])
    assert loop is not None, f"{name}: no loop with {sass.WIDE_LOAD}"
    assert loop.count(sass.WIDE_LOAD) >= UNROLL[threads], loop.opcodes
    assert loop.count("LDS.128") >= 1, "x is read from shared memory 16 bytes at a time"
    assert loop.count("BRX") == 0, "no dtype switch inside the loop"
    if threads == DEFAULT_THREADS_PER_BLOCK:
        assert loop.loads_in_flight() >= UNROLL[threads], loop.instructions
    if threads == DEFAULT_THREADS_PER_BLOCK or not kind.startswith("int"):
        assert not any(op.startswith(sass.LOCAL) for op in loop.opcodes), "no spills in the hot loop"
    loads, flight = loop.count(sass.WIDE_LOAD), loop.loads_in_flight()
    print(f"T={threads} {kind}: {loads} LDG.E.128, up to {flight} in flight, "
          f"{len(loop.opcodes)} instructions")
