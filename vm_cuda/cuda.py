"""Running the megakernel on an NVIDIA GPU (spec §8.7).

:class:`CudaRuntime` is the GPU backend's :class:`~vm_cuda.resident.Memory`. Every driver call
goes through :class:`vm_cuda.driver.Driver` (cuda-bindings, PyCUDA or ctypes on ``libcuda``: one
code path, every call checked). It retains GPU 0's primary context, checks cooperative launch
(``CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH``), loads the cubin built for the device's architecture
and the block size (:func:`vm_cuda.build.build_cubin`), checks that every block of the grid can
be co-resident (``cuOccupancyMaxActiveBlocksPerMultiprocessor`` × SMs), keeps the image in device
memory with a pinned staging buffer for the per-launch copies, and launches with
``cuLaunchCooperativeKernel`` on its own stream. The host waits by polling an event up to the
launch's deadline; past it, it writes ``AMK_ABORT_HOST`` into the abort word through a second
stream (the blocks stop at their next poll). A fault that poisons the context (an illegal
address, a launch timeout) becomes a :class:`~vm_cuda.status.KernelFault` /
:class:`~vm_cuda.status.KernelTimeout` after the primary context has been reset and reopened, so
later launches in the process work (their image is written again).
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import time
from collections.abc import Iterable
from functools import cache
from typing import Any

import numpy as np

from amkspec.proofs.outputs import block_size_error
from vm_cuda import layout
from vm_cuda.build import DEFAULT_THREADS_PER_BLOCK, SOURCE_DIR, build_cubin
from vm_cuda.driver import (
    EVENT_DEFAULT,
    LAUNCH_TIMEOUT,
    NOT_READY,
    STREAM_NON_BLOCKING,
    CudaUnavailable,
    Driver,
    DriverError,
    open_driver,
)
from vm_cuda.status import KernelFault, KernelTimeout, RunStatus

__all__ = ["CudaRuntime", "CudaUnavailable", "kernel_smem_bytes", "unavailable_reason"]

STOP_GRACE_S = 5.0
"""How long a launch may take to stop once the host has written the abort word."""
_POLL_MIN_S, _POLL_MAX_S = 20e-6, 1e-3
_ABORT_SLOT = 256  # the pinned buffer's first bytes hold the abort word the host may write


def _define(name: str, text: str) -> int | None:
    found = re.search(rf"#define\s+{name}\s+(\d+)", text)
    return int(found.group(1)) if found else None


def kernel_smem_bytes() -> int:
    """Dynamic shared memory per block: the kernel's control words (``AMK_CTL_BYTES``,
    megakernel.cu) plus the opcodes' scratch (``AMK_OP_SMEM_BYTES``, ``ops/``) — read from the
    sources, defined there once."""
    ctl = _define("AMK_CTL_BYTES", (SOURCE_DIR / "megakernel.cu").read_text())
    found = (_define("AMK_OP_SMEM_BYTES", p.read_text()) for p in sorted((SOURCE_DIR / "ops").glob("*.cuh")))
    ops = next((v for v in found if v is not None), None)
    if ctl is None or ops is None:
        raise CudaUnavailable("AMK_CTL_BYTES / AMK_OP_SMEM_BYTES not found in the kernel sources")
    return ctl + ops


@cache
def _probe() -> str | None:
    try:
        open_driver()
    except CudaUnavailable as exc:
        return str(exc)
    return None


def unavailable_reason() -> str | None:
    """Why the GPU path cannot run here, or None when it can (what GPU tests skip with)."""
    return _probe()


def check_block_size(threads_per_block: int) -> int:
    """``threads_per_block`` if a kernel is built for it (exactly the sizes ``validate()`` accepts,
    O503), else :class:`CudaUnavailable` saying why."""
    problem = block_size_error(threads_per_block)
    if problem is not None:
        raise CudaUnavailable(f"the megakernel cannot launch with {problem} (validate() reports O503)")
    return threads_per_block


class CudaRuntime:
    """The megakernel on GPU 0 (see the module doc); ``facts()`` describes the device and the kernel."""

    def __init__(self, threads_per_block: int | None = None, driver: Driver | None = None) -> None:
        self.threads_per_block = check_block_size(threads_per_block or DEFAULT_THREADS_PER_BLOCK)
        self.driver = driver or open_driver()
        d = self.driver
        self.device = d.call("cuDeviceGet", 0)
        self.name = bytes(d.call("cuDeviceGetName", self.device)).decode(errors="replace")
        if not d.attribute("COOPERATIVE_LAUNCH", self.device):
            raise CudaUnavailable(f"{self.name} does not support cooperative launch")
        major = d.attribute("COMPUTE_CAPABILITY_MAJOR", self.device)
        minor = d.attribute("COMPUTE_CAPABILITY_MINOR", self.device)
        self.sm_count = d.attribute("MULTIPROCESSOR_COUNT", self.device)
        self.arch = f"sm_{major}{minor}"
        self.cubin, self.ptxas_log = build_cubin(self.arch, self.threads_per_block)
        self.smem_bytes = kernel_smem_bytes()
        self.generation = 0
        self.last_kernel_s = 0.0
        self.context: Any = None
        self._image: tuple[int, int] | None = None  # (device address, bytes)
        self._pinned: tuple[int, np.ndarray] | None = None  # (address, view)
        self._cursor = _ABORT_SLOT
        self._open()

    # -- context, module, streams --------------------------------------------------------------

    def _open(self) -> None:
        """Retain the primary context and make it current; streams, events, module, occupancy."""
        d = self.driver
        self.context = d.call("cuDevicePrimaryCtxRetain", self.device)
        try:
            d.call("cuCtxSetCurrent", self.context)
            self.stream = d.call("cuStreamCreate", STREAM_NON_BLOCKING)
            self.abort_stream = d.call("cuStreamCreate", STREAM_NON_BLOCKING)
            self.events = (d.call("cuEventCreate", EVENT_DEFAULT), d.call("cuEventCreate", EVENT_DEFAULT))
            self.module = d.call("cuModuleLoadData", self.cubin.read_bytes())
            self.function = d.call("cuModuleGetFunction", self.module, b"amk_megakernel")
            if self.smem_bytes > 48 * 1024:
                d.call("cuFuncSetAttribute", self.function, 8, self.smem_bytes)
            self.registers = d.func_attribute("NUM_REGS", self.function)
            self.local_bytes = d.func_attribute("LOCAL_SIZE_BYTES", self.function)
            self.blocks_per_sm = int(d.call(
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", self.function, self.threads_per_block,
                self.smem_bytes,
            ))
        except BaseException:
            self.close()
            raise
        if self.blocks_per_sm < 1:
            self.close()
            raise CudaUnavailable(
                f"the megakernel built for {self.threads_per_block} threads per block ({self.registers} "
                f"registers per thread, {self.smem_bytes} bytes of shared memory) cannot run on {self.name}"
            )
        self.max_blocks = self.blocks_per_sm * self.sm_count

    def facts(self) -> dict[str, Any]:
        """The device and the loaded kernel, as ``tools/gpu_check.py`` reports them."""
        d, dev = self.driver, self.device
        return {
            "device": self.name, "arch": self.arch, "backend": d.name,
            "driver_version": int(d.call("cuDriverGetVersion")),
            "sms": self.sm_count, "memory_bytes": int(d.call("cuDeviceTotalMem", dev)),
            "l2_bytes": d.attribute("L2_CACHE_SIZE", dev),
            "smem_optin_bytes": d.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", dev),
            "registers_per_sm": d.attribute("MAX_REGISTERS_PER_MULTIPROCESSOR", dev),
            "threads_per_sm": d.attribute("MAX_THREADS_PER_MULTIPROCESSOR", dev),
            "threads_per_block": self.threads_per_block, "kernel_registers": self.registers,
            "kernel_local_bytes": self.local_bytes, "kernel_smem_bytes": self.smem_bytes,
            "blocks_per_sm": self.blocks_per_sm, "max_blocks": self.max_blocks,
        }

    def close(self) -> None:
        """Free the image and staging, unload the module, release the context (idempotent)."""
        if self.context is None:
            return
        for name, handle in (
            ("cuMemFree", self._image[0] if self._image else None),
            ("cuMemFreeHost", self._pinned[0] if self._pinned else None),
            ("cuEventDestroy", getattr(self, "events", (None, None))[0]),
            ("cuEventDestroy", getattr(self, "events", (None, None))[1]),
            ("cuStreamDestroy", getattr(self, "stream", None)),
            ("cuStreamDestroy", getattr(self, "abort_stream", None)),
            ("cuModuleUnload", getattr(self, "module", None)),
        ):
            if handle is not None:
                self._quietly(name, handle)
        self._image = self._pinned = None
        self.__dict__.pop("events", None)
        for name in ("stream", "abort_stream", "module", "function"):
            self.__dict__.pop(name, None)
        self._quietly("cuDevicePrimaryCtxRelease", self.device)
        self.context = None

    def _quietly(self, name: str, *args: Any) -> None:
        """A driver call whose failure leaves nothing to do (a context being torn down)."""
        with contextlib.suppress(CudaUnavailable):
            self.driver.call(name, *args)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the driver may be gone
            self.close()

    def _recover(self) -> str:
        """After a fault that poisons the context: reset the primary context and reopen everything;
        the image is lost (``generation`` changes). What happened, for the error."""
        self._image = self._pinned = None  # freed by the reset
        for name in ("cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxRelease"):
            self._quietly(name, self.device)
        self.context = None
        self.generation += 1
        try:
            self._open()
        except CudaUnavailable as exc:
            return f"the GPU context could not be reopened ({exc})"
        return "the GPU context was reset; later launches write the image again"

    def _usable(self) -> None:
        """The context current on this thread (a VM may be used from several), or CudaUnavailable."""
        if self.context is None:
            raise CudaUnavailable("this CUDA runtime was closed")
        self.driver.call("cuCtxSetCurrent", self.context)

    # -- memory ---------------------------------------------------------------------------------

    def allocate(self, nbytes: int, staging_bytes: int) -> int:
        """Device memory for the image and a pinned staging buffer; frees the earlier ones."""
        self._usable()
        d = self.driver
        if self._image is not None:
            d.call("cuMemFree", self._image[0])
            self._image = None
        if self._pinned is not None:
            d.call("cuMemFreeHost", self._pinned[0])
            self._pinned = None
        self._image = (int(d.call("cuMemAlloc", max(nbytes, 1))), nbytes)
        size = _ABORT_SLOT + layout.align(staging_bytes)
        address = int(d.call("cuMemHostAlloc", size, 0))
        view = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))
        self._pinned = (address, view)
        self._cursor = _ABORT_SLOT
        return self._image[0]

    def _stage(self, nbytes: int) -> int | None:
        """A pinned offset for ``nbytes`` of this launch's copies, or None when staging is full."""
        assert self._pinned is not None
        if self._cursor + nbytes > self._pinned[1].size:
            return None
        at = self._cursor
        self._cursor = layout.align(at + nbytes)
        return at

    def write(self, offset: int, data: np.ndarray) -> None:
        """Copy ``data`` to the image (through pinned staging when it fits, else directly)."""
        self._usable()
        assert self._image is not None and self._pinned is not None
        data = np.ascontiguousarray(data, dtype=np.uint8)
        at = self._stage(data.size)
        if at is None:
            source, keep = int(data.ctypes.data), data
        else:
            self._pinned[1][at : at + data.size] = data
            source, keep = self._pinned[0] + at, None
        with self._faults():
            self.driver.call("cuMemcpyHtoDAsync", self._image[0] + offset, source, data.size, self.stream)
            if keep is not None:  # pageable memory: wait before the caller may free it
                self.driver.call("cuStreamSynchronize", self.stream)

    def zero(self, offset: int, nbytes: int) -> None:
        self._usable()
        assert self._image is not None
        with self._faults():
            self.driver.call("cuMemsetD8Async", self._image[0] + offset, 0, nbytes, self.stream)

    def read(self, ranges: Iterable[tuple[int, int]]) -> list[np.ndarray]:
        """Copies of image ranges: all queued into pinned staging, one stream synchronisation."""
        self._usable()
        assert self._image is not None and self._pinned is not None
        self._cursor = _ABORT_SLOT
        out: list[np.ndarray] = []
        placed: list[tuple[int, int]] = []
        with self._faults():
            for offset, nbytes in ranges:
                at = self._stage(nbytes)
                if at is None:
                    host = np.empty(nbytes, dtype=np.uint8)
                    self.driver.call("cuMemcpyDtoHAsync", int(host.ctypes.data), self._image[0] + offset,
                                     nbytes, self.stream)
                    out.append(host)
                    placed.append((-1, 0))
                else:
                    self.driver.call("cuMemcpyDtoHAsync", self._pinned[0] + at, self._image[0] + offset,
                                     nbytes, self.stream)
                    out.append(np.empty(0, dtype=np.uint8))
                    placed.append((at, nbytes))
            self.driver.call("cuStreamSynchronize", self.stream)
        self._cursor = _ABORT_SLOT
        return [
            self._pinned[1][at : at + n].copy() if at >= 0 else host
            for (at, n), host in zip(placed, out, strict=True)
        ]

    # -- launch ---------------------------------------------------------------------------------

    def _faults(self) -> _FaultScope:
        return _FaultScope(self)

    def run(self, grid: int, deadline_s: float, abort_offset: int) -> None:
        """Launch cooperatively and wait (event polling) up to ``deadline_s``; ``last_kernel_s`` is the
        kernel's own time (events around the launch)."""
        self._usable()
        if grid > self.max_blocks:
            raise CudaUnavailable(
                f"{grid} blocks cannot all be co-resident on {self.name} (at most {self.max_blocks} with "
                f"{self.threads_per_block} threads and {self.smem_bytes} bytes of shared memory each)"
            )
        assert self._image is not None
        d = self.driver
        arg = ctypes.c_void_p(self._image[0])
        params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))  # kernelParams: one pointer per argument
        start, end = self.events
        with self._faults():
            d.call("cuEventRecord", start, self.stream)
            d.call(
                "cuLaunchCooperativeKernel", self.function, grid, 1, 1, self.threads_per_block, 1, 1,
                self.smem_bytes, self.stream, ctypes.addressof(params),
            )
            d.call("cuEventRecord", end, self.stream)
            self._wait(end, deadline_s, abort_offset)
            self.last_kernel_s = float(d.call("cuEventElapsedTime", start, end)) / 1e3
        self._cursor = _ABORT_SLOT

    def _wait(self, event: Any, deadline_s: float, abort_offset: int) -> None:
        """Poll ``event`` until it completes; at ``deadline_s`` write the abort word, then give the
        blocks :data:`STOP_GRACE_S` to stop (KernelTimeout, context reset, if they do not)."""
        began = time.monotonic()
        aborted: float | None = None
        pause = _POLL_MIN_S
        while self.driver.query("cuEventQuery", event) == NOT_READY:
            now = time.monotonic()
            if aborted is None and now - began > deadline_s:
                self._host_abort(abort_offset)
                aborted = now
            elif aborted is not None and now - aborted > STOP_GRACE_S:
                detail = self._recover()
                raise KernelTimeout(RunStatus(
                    "TIMEOUT", f"the launch passed the host deadline of {deadline_s:g} s and did not stop "
                    f"within {STOP_GRACE_S:g} s of the abort; {detail}"))
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)

    def _host_abort(self, abort_offset: int) -> None:
        """Write ``AMK_ABORT_HOST`` into the image's abort word through the second stream."""
        assert self._image is not None and self._pinned is not None
        self._pinned[1][:4].view("<i4")[0] = layout.ABORT_CODES["HOST"]
        address = self._image[0] + abort_offset
        self.driver.call("cuMemcpyHtoDAsync", address, self._pinned[0], 4, self.abort_stream)


class _FaultScope:
    """Turns a driver error that poisons the context into KernelFault / KernelTimeout (after the
    context is recovered); other driver errors pass as :class:`CudaUnavailable`."""

    def __init__(self, runtime: CudaRuntime) -> None:
        self.runtime = runtime

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if not isinstance(exc, DriverError) or not exc.sticky:
            return
        detail = f"the device reported {exc.name} ({exc.code}) in {exc.call}; {self.runtime._recover()}"
        if exc.code == LAUNCH_TIMEOUT:
            raise KernelTimeout(RunStatus("TIMEOUT", detail)) from exc
        raise KernelFault(RunStatus("FAULT", detail)) from exc
