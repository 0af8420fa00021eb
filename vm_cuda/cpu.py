"""Running an ABI image on the CPU build (spec §8.6).

:class:`CpuRuntime` loads the shared library built by :mod:`vm_cuda.build` with ctypes and
launches an image in a 256-byte aligned copy after :func:`vm_cuda.pack.relocate`;
:func:`run_driver` runs the standalone driver of a (sanitizer) variant on an image file.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from vm_cuda import layout
from vm_cuda.build import BuildError, build_driver, build_library
from vm_cuda.pack import Image, relocate

CPU_THREADS_PER_BLOCK = 4
"""Threads per block on the CPU build (every block's threads are real threads)."""
CPU_MAX_BLOCKS = 8
"""Grid cap on the CPU build (more only where a task is pinned to a higher SM)."""
_SIZES = ("amk_params_t", "amk_buffer_t", "amk_instruction_t", "amk_status_t", "amk_image_header_t")


def aligned_copy(image: Image) -> np.ndarray:
    """The image bytes in a fresh array whose start is :data:`layout.IMAGE_ALIGN`-aligned."""
    n = image.data.size
    store = np.zeros(n + layout.IMAGE_ALIGN, dtype=np.uint8)
    start = (-store.ctypes.data) % layout.IMAGE_ALIGN
    data = store[start : start + n]
    data[:] = image.data
    return data


class CpuRuntime:
    """The CPU build of one variant, loaded once; :meth:`launch` runs an image and returns its bytes."""

    def __init__(self, variant: str = "release", threads_per_block: int = CPU_THREADS_PER_BLOCK) -> None:
        self.path = build_library(variant)
        self.lib = ctypes.CDLL(str(self.path))
        self.lib.amk_cpu_launch.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.lib.amk_cpu_launch.restype = ctypes.c_int
        self.threads_per_block = threads_per_block
        self.max_blocks = CPU_MAX_BLOCKS
        self._check_abi()

    def _check_abi(self) -> None:
        out = (ctypes.c_int64 * 8)()
        self.lib.amk_abi_sizes(out, 8)
        built = {name: out[i] for i, name in enumerate(_SIZES)}
        expected = {name: layout.RECORDS[name].itemsize for name in _SIZES}
        if built != expected:
            raise BuildError(f"{self.path} was built for another ABI: {built} != {expected}")

    def launch(self, image: Image) -> np.ndarray:
        """Run ``image`` to completion (or its watchdog); the returned bytes hold the results."""
        data = aligned_copy(image)
        relocate(data, data.ctypes.data)
        rc = self.lib.amk_cpu_launch(ctypes.c_void_p(data.ctypes.data), self.threads_per_block)
        if rc != 0:
            raise BuildError(f"amk_cpu_launch refused the image (code {rc})")
        return data


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
