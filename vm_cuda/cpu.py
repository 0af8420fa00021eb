"""Running an ABI image on the CPU build (spec §8.6).

:class:`CpuRuntime` loads the shared library built by :mod:`vm_cuda.build` with ctypes and is
the CPU backend's memory for :mod:`vm_cuda.resident` (the same staging the GPU runs);
:func:`run_driver` runs the standalone driver of a (sanitizer) variant on an image file.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from vm_cuda import layout
from vm_cuda.build import BuildError, build_driver, build_library
from vm_cuda.pack import Image
from vm_cuda.status import KernelTimeout, RunStatus

CPU_THREADS_PER_BLOCK = 4
"""Threads per block on the CPU build (every block's threads are real threads)."""
CPU_MAX_BLOCKS = 8
"""Grid cap on the CPU build (more only where a task is pinned to a higher SM)."""
STOP_GRACE_S = 5.0
"""How long a launch may take to stop once the host has written the abort word."""
_SIZES = ("amk_params_t", "amk_buffer_t", "amk_instruction_t", "amk_status_t", "amk_image_header_t")


class CpuRuntime:
    """The CPU build of one variant, loaded once; the :class:`~vm_cuda.resident.Memory` of the
    CPU backend: the image lives in a 256-byte aligned host array, and a launch runs the kernel's
    blocks as threads in a worker thread the host can stop at its deadline."""

    generation = 0  # host memory is never lost

    def __init__(self, variant: str = "release", threads_per_block: int = CPU_THREADS_PER_BLOCK) -> None:
        self.path = build_library(variant)
        self.lib = ctypes.CDLL(str(self.path))
        self.lib.amk_cpu_launch.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.lib.amk_cpu_launch.restype = ctypes.c_int
        self.threads_per_block = threads_per_block
        self.max_blocks = CPU_MAX_BLOCKS
        self.data = np.zeros(0, dtype=np.uint8)
        self.last_kernel_s = 0.0
        self._stuck: list[np.ndarray] = []
        self._check_abi()

    def _check_abi(self) -> None:
        out = (ctypes.c_int64 * 8)()
        self.lib.amk_abi_sizes(out, 8)
        built = {name: out[i] for i, name in enumerate(_SIZES)}
        expected = {name: layout.RECORDS[name].itemsize for name in _SIZES}
        if built != expected:
            raise BuildError(f"{self.path} was built for another ABI: {built} != {expected}")

    def allocate(self, nbytes: int, staging_bytes: int) -> int:
        """A zeroed, :data:`layout.IMAGE_ALIGN`-aligned host array for the image (staging is not needed)."""
        store = np.zeros(nbytes + layout.IMAGE_ALIGN, dtype=np.uint8)
        start = (-store.ctypes.data) % layout.IMAGE_ALIGN
        self.data = store[start : start + nbytes]
        return int(self.data.ctypes.data)

    def write(self, offset: int, data: np.ndarray) -> None:
        self.data[offset : offset + data.size] = data

    def zero(self, offset: int, nbytes: int) -> None:
        self.data[offset : offset + nbytes] = 0

    def read(self, ranges: Iterable[tuple[int, int]]) -> list[np.ndarray]:
        return [self.data[o : o + n].copy() for o, n in ranges]

    def run(self, grid: int, deadline_s: float, abort_offset: int) -> None:
        """Run the image on ``grid`` blocks of threads; past ``deadline_s``, set the abort word to
        ``AMK_ABORT_HOST`` (the blocks stop at their next poll)."""
        rc: list[int] = []
        worker = threading.Thread(
            target=lambda: rc.append(self.lib.amk_cpu_launch(ctypes.c_void_p(self.data.ctypes.data),
                                                             self.threads_per_block)),
            name="amk_cpu_launch", daemon=True,
        )
        start = time.perf_counter()
        worker.start()
        worker.join(deadline_s)
        if worker.is_alive():
            abort = self.data[abort_offset : abort_offset + 4].view("<i4")
            abort[0] = layout.ABORT_CODES["HOST"]
            worker.join(STOP_GRACE_S)
            if worker.is_alive():
                self._stuck.append(self.data)  # the thread still uses it: never free it
                raise KernelTimeout(RunStatus(
                    "TIMEOUT", f"the CPU build passed the host deadline of {deadline_s:g} s and did not "
                    f"stop within {STOP_GRACE_S:g} s of the abort"))
        self.last_kernel_s = time.perf_counter() - start
        if rc != [0]:
            raise BuildError(f"amk_cpu_launch refused the image (code {rc[0] if rc else '?'})")


def run_driver(
    image: Image, variant: str, threads_per_block: int = CPU_THREADS_PER_BLOCK, timeout_s: float = 120.0
) -> tuple[np.ndarray, subprocess.CompletedProcess[str]]:
    """Run ``image`` in the standalone driver of ``variant``; the output image bytes and the process."""
    driver = build_driver(variant)
    with tempfile.TemporaryDirectory(prefix="amk_driver_") as tmp:
        src, dst = Path(tmp) / "in.img", Path(tmp) / "out.img"
        src.write_bytes(image.tobytes())
        proc = subprocess.run(
            [str(driver), str(src), str(dst), str(threads_per_block)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        out = np.fromfile(dst, dtype=np.uint8) if dst.exists() else np.zeros(0, dtype=np.uint8)
    return out, proc
