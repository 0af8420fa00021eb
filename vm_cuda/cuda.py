"""Running an ABI image on an NVIDIA GPU (spec §8.7).

PyCUDA owns the context (the device's primary context) and the device memory. PyCUDA has
no cooperative launch, and its ``Function`` does not expose its ``CUfunction``, so the
nvcc-built cubin for the device's architecture (:func:`vm_cuda.build.build_cubin`) is
loaded once, through the driver API (ctypes on ``libcuda``), in PyCUDA's context; that
handle gets the occupancy check (every block co-resident: ``blocks_per_sm × SMs ≥ grid``)
and the launch, ``cuLaunchCooperativeKernel``. :meth:`CudaRuntime.close` (also run when the
runtime is collected) unloads the module and releases the context. Everything is imported
lazily: without pycuda, a driver or a GPU, :func:`unavailable_reason` says why and every GPU
path raises :class:`CudaUnavailable` with that reason; a failing PyCUDA call (``drv.Error``)
is raised as :class:`CudaUnavailable` too, never as PyCUDA's own exception.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from amkspec.ir import AmkspecError
from vm_cuda.build import SOURCE_DIR, build_cubin
from vm_cuda.pack import Image, relocate

DEFAULT_THREADS_PER_BLOCK = 256
_COOPERATIVE_LAUNCH_ATTR = 95  # CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
_MAX_DYNAMIC_SMEM_ATTR = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


class CudaUnavailable(AmkspecError, RuntimeError):
    """No usable GPU path here (no pycuda, no driver, no device, or no cooperative launch)."""


def _define(name: str, paths: list[Path]) -> int | None:
    for path in paths:
        found = re.search(rf"#define\s+{name}\s+(\d+)", path.read_text())
        if found:
            return int(found.group(1))
    return None


def kernel_smem_bytes() -> int:
    """Dynamic shared memory per block: the kernel's control words (``AMK_CTL_BYTES``,
    megakernel.cu) plus the opcodes' scratch (``AMK_OP_SMEM_BYTES``, ``ops/``) — read from the
    sources, defined there once."""
    kernel = [SOURCE_DIR / "megakernel.cu"]
    ctl = _define("AMK_CTL_BYTES", kernel)
    ops = _define("AMK_OP_SMEM_BYTES", sorted((SOURCE_DIR / "ops").glob("*.cuh")))
    if ctl is None or ops is None:
        raise CudaUnavailable("AMK_CTL_BYTES / AMK_OP_SMEM_BYTES not found in the kernel sources")
    return ctl + ops


@cache
def _libcuda() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise CudaUnavailable(f"the CUDA driver library libcuda.so.1 cannot be loaded ({exc})") from exc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(rc, ctypes.byref(name))
        raise CudaUnavailable(f"{what} failed: {(name.value or b'?').decode()} ({rc})")


@cache
def _driver() -> Any:
    """``pycuda.driver``, initialised, with at least one device; else :class:`CudaUnavailable`."""
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        raise CudaUnavailable("pycuda is not installed (pip install 'amkspec[cuda]')") from exc
    try:
        drv.init()
        if drv.Device.count() == 0:
            raise CudaUnavailable("the CUDA driver reports no GPU")
    except drv.Error as exc:
        raise CudaUnavailable(f"the CUDA driver cannot be initialised ({exc})") from exc
    _libcuda()
    return drv


def unavailable_reason() -> str | None:
    """Why the GPU path cannot run here, or None when it can (what GPU tests skip with)."""
    try:
        _driver()
    except CudaUnavailable as exc:
        return str(exc)
    return None


@contextmanager
def _pycuda_errors(drv: Any, what: str) -> Iterator[None]:
    """Raise a failing PyCUDA call (``drv.Error``) as :class:`CudaUnavailable`, naming ``what``."""
    try:
        yield
    except drv.Error as exc:
        raise CudaUnavailable(f"{what} failed: {exc}") from exc


class CudaRuntime:
    """The megakernel on GPU 0: :meth:`launch` runs an image cooperatively and returns its bytes."""

    def __init__(self, threads_per_block: int | None = None) -> None:
        drv = _driver()
        self.drv = drv
        self._module_handle: ctypes.c_void_p | None = None
        with _pycuda_errors(drv, "opening GPU 0"):
            self.device = drv.Device(0)
            self.context = self.device.retain_primary_context()
            self.context.push()
        try:
            with _pycuda_errors(drv, "querying GPU 0"):
                if not self.device.get_attribute(drv.device_attribute.COOPERATIVE_LAUNCH):
                    raise CudaUnavailable(f"{self.device.name()} does not support cooperative launch")
                major, minor = self.device.compute_capability()
                self.sm_count = self.device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
            self.arch = f"sm_{major}{minor}"
            self.cubin, self.ptxas_log = build_cubin(self.arch)
            self.threads_per_block = threads_per_block or DEFAULT_THREADS_PER_BLOCK
            self.smem_bytes = kernel_smem_bytes()
            self._function = self._driver_function()
            self.max_blocks = self.max_coresident_blocks()
            self.last_kernel_s = 0.0
        except BaseException:
            self.context.pop()
            self.close()
            raise
        self.context.pop()

    def close(self) -> None:
        """Unload the kernel module and release the primary context (idempotent)."""
        context = getattr(self, "context", None)
        if context is None:
            return
        self.context = None
        try:
            context.push()
            try:
                if self._module_handle is not None:
                    _libcuda().cuModuleUnload(self._module_handle)
                    self._module_handle = None
            finally:
                context.pop()
            context.detach()
        except Exception:  # noqa: BLE001 - a dying context (interpreter exit) has nothing left to free
            pass

    def __del__(self) -> None:
        self.close()

    def _driver_function(self) -> ctypes.c_void_p:
        """The kernel's ``CUfunction`` in the current context (the same cubin, via the driver API)."""
        lib = _libcuda()
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        image = self.cubin.read_bytes()
        _check(lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(image)), "cuModuleLoadData")
        self._module_handle = module
        _check(
            lib.cuModuleGetFunction(ctypes.byref(function), module, b"amk_megakernel"), "cuModuleGetFunction"
        )
        if self.smem_bytes > 48 * 1024:
            _check(
                lib.cuFuncSetAttribute(function, _MAX_DYNAMIC_SMEM_ATTR, self.smem_bytes),
                "cuFuncSetAttribute",
            )
        return function

    def max_coresident_blocks(self) -> int:
        """Blocks that can be resident at once for this kernel, block size and shared memory."""
        per_sm = ctypes.c_int()
        _check(
            _libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                ctypes.byref(per_sm),
                self._function,
                ctypes.c_int(self.threads_per_block),
                ctypes.c_size_t(self.smem_bytes),
            ),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )
        return per_sm.value * int(self.sm_count)

    def launch(self, image: Image) -> np.ndarray:
        """Copy ``image`` to the device, relocate it there, launch cooperatively, copy it back.

        ``last_kernel_s`` is the kernel's own time (CUDA events around the launch, copies excluded).
        """
        if self.context is None:
            raise CudaUnavailable("this CUDA runtime was closed")
        grid = len(image.queues)
        self.context.push()
        try:
            limit = self.max_blocks
            if grid > limit:
                raise CudaUnavailable(
                    f"{grid} blocks cannot all be co-resident on {self.device.name()} (at most {limit} with "
                    f"{self.threads_per_block} threads and {self.smem_bytes} bytes of shared memory each)"
                )
            data = image.data.copy()
            with _pycuda_errors(self.drv, f"the launch of {grid} blocks ({data.size} image bytes)"):
                dev = self.drv.mem_alloc(data.size)
                try:
                    self._run(dev, data, grid)
                finally:
                    dev.free()
            return data
        finally:
            self.context.pop()

    def _run(self, dev: Any, data: np.ndarray, grid: int) -> None:
        """Relocate ``data`` to ``dev``, copy it there, launch, wait, and copy it back into ``data``."""
        relocate(data, int(dev))
        self.drv.memcpy_htod(dev, data)
        arg = ctypes.c_void_p(int(dev))
        params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))  # kernelParams: one pointer per argument
        start, end = self.drv.Event(), self.drv.Event()
        start.record()
        _check(
            _libcuda().cuLaunchCooperativeKernel(
                self._function, grid, 1, 1, self.threads_per_block, 1, 1, self.smem_bytes, None, params
            ),
            "cuLaunchCooperativeKernel",
        )
        end.record()
        self.context.synchronize()
        self.last_kernel_s = start.time_till(end) / 1e3
        self.drv.memcpy_dtoh(data, dev)
