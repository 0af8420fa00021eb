"""The CUDA driver API as the megakernel uses it (spec §8.7): one facade, three backends.

:class:`Driver` is the one code path of the GPU runtime: every driver call goes through
:meth:`Driver.call`, which checks its ``CUresult`` and maps a failure to one error type
(:class:`DriverError`, naming the call and the result). Backends only marshal:

- ``pycuda``: PyCUDA initialises the driver (so PyCUDA code in the process shares the device's
  primary context), the calls go through ``ctypes`` on ``libcuda`` (PyCUDA has no cooperative
  launch and does not expose its handles);
- ``cuda-bindings``: NVIDIA's ``cuda.bindings.driver`` (wheels; returns ``(CUresult, *values)``);
- ``ctypes``: ``libcuda.so.1`` (``$AMK_LIBCUDA`` names another) directly, with every symbol's
  argument types declared.

:func:`open_driver` picks the first that loads (``$AMK_CUDA_BACKEND`` forces one). The attribute
and result codes are the driver's own (checked against ``cuda.bindings.driver``'s enums by the
tests); a fault that poisons the context (:data:`STICKY`) makes the runtime reset it.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from typing import Any

from amkspec.ir import AmkspecError

SUCCESS, NOT_READY = 0, 600
LAUNCH_TIMEOUT = 702
STICKY = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719, 214})
"""Results after which the context is unusable until reset: illegal address, launch timeout,
assert, hardware stack error, illegal instruction, misaligned address, invalid address space,
invalid PC, launch failed, uncorrectable ECC error."""

ATTR = {
    "COOPERATIVE_LAUNCH": 95,
    "MULTIPROCESSOR_COUNT": 16,
    "COMPUTE_CAPABILITY_MAJOR": 75,
    "COMPUTE_CAPABILITY_MINOR": 76,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "MAX_THREADS_PER_MULTIPROCESSOR": 39,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 82,
    "L2_CACHE_SIZE": 38,
    "CLOCK_RATE": 13,
}
"""``CUdevice_attribute`` codes the runtime reads (``CU_DEVICE_ATTRIBUTE_<name>``)."""
FUNC_ATTR = {
    "MAX_DYNAMIC_SHARED_SIZE_BYTES": 8, "NUM_REGS": 4, "LOCAL_SIZE_BYTES": 3, "MAX_THREADS_PER_BLOCK": 0
}
"""``CUfunction_attribute`` codes (``CU_FUNC_ATTRIBUTE_<name>``)."""
STREAM_NON_BLOCKING = 1
EVENT_DEFAULT = 0
BACKENDS = ("pycuda", "cuda-bindings", "ctypes")


class CudaUnavailable(AmkspecError, RuntimeError):
    """No usable GPU path here (no driver library, no device, or no cooperative launch)."""


class DriverError(CudaUnavailable):
    """A driver call failed: ``call`` is its name, ``code`` the ``CUresult``, ``name`` its name."""

    def __init__(self, call: str, code: int, name: str) -> None:
        super().__init__(f"{call} failed: {name} ({code})")
        self.call, self.code, self.name = call, code, name

    @property
    def sticky(self) -> bool:
        """Whether the context is poisoned (the runtime must reset it)."""
        return self.code in STICKY


_V, _I, _U, _Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
_Q, _S, _F = ctypes.c_uint64, ctypes.c_char_p, ctypes.c_float
SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[Any, ...], tuple[Any, ...]]] = {
    # name: (libcuda symbols to try, out-parameter types, in-parameter types)
    "cuInit": (("cuInit",), (), (_U,)),
    "cuDriverGetVersion": (("cuDriverGetVersion",), (_I,), ()),
    "cuDeviceGetCount": (("cuDeviceGetCount",), (_I,), ()),
    "cuDeviceGet": (("cuDeviceGet",), (_I,), (_I,)),
    "cuDeviceGetAttribute": (("cuDeviceGetAttribute",), (_I,), (_I, _I)),
    "cuDeviceTotalMem": (("cuDeviceTotalMem_v2",), (_Z,), (_I,)),
    "cuDevicePrimaryCtxRetain": (("cuDevicePrimaryCtxRetain",), (_V,), (_I,)),
    "cuDevicePrimaryCtxRelease": (("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"), (), (_I,)),
    "cuDevicePrimaryCtxReset": (("cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset"), (), (_I,)),
    "cuCtxSetCurrent": (("cuCtxSetCurrent",), (), (_V,)),
    "cuModuleLoadData": (("cuModuleLoadData",), (_V,), (_S,)),
    "cuModuleGetFunction": (("cuModuleGetFunction",), (_V,), (_V, _S)),
    "cuModuleUnload": (("cuModuleUnload",), (), (_V,)),
    "cuFuncSetAttribute": (("cuFuncSetAttribute",), (), (_V, _I, _I)),
    "cuFuncGetAttribute": (("cuFuncGetAttribute",), (_I,), (_I, _V)),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (
        ("cuOccupancyMaxActiveBlocksPerMultiprocessor",), (_I,), (_V, _I, _Z)
    ),
    "cuMemAlloc": (("cuMemAlloc_v2",), (_Q,), (_Z,)),
    "cuMemFree": (("cuMemFree_v2",), (), (_Q,)),
    "cuMemHostAlloc": (("cuMemHostAlloc",), (_V,), (_Z, _U)),
    "cuMemFreeHost": (("cuMemFreeHost",), (), (_V,)),
    "cuMemcpyHtoDAsync": (("cuMemcpyHtoDAsync_v2",), (), (_Q, _V, _Z, _V)),
    "cuMemcpyDtoHAsync": (("cuMemcpyDtoHAsync_v2",), (), (_V, _Q, _Z, _V)),
    "cuMemsetD8Async": (("cuMemsetD8Async",), (), (_Q, ctypes.c_ubyte, _Z, _V)),
    "cuStreamCreate": (("cuStreamCreate",), (_V,), (_U,)),
    "cuStreamSynchronize": (("cuStreamSynchronize",), (), (_V,)),
    "cuStreamDestroy": (("cuStreamDestroy_v2",), (), (_V,)),
    "cuEventCreate": (("cuEventCreate",), (_V,), (_U,)),
    "cuEventRecord": (("cuEventRecord",), (), (_V, _V)),
    "cuEventQuery": (("cuEventQuery",), (), (_V,)),
    "cuEventElapsedTime": (("cuEventElapsedTime_v2", "cuEventElapsedTime"), (_F,), (_V, _V)),
    "cuEventDestroy": (("cuEventDestroy_v2",), (), (_V,)),
    "cuLaunchCooperativeKernel": (
        ("cuLaunchCooperativeKernel",), (), (_V, _U, _U, _U, _U, _U, _U, _U, _V, _V)
    ),
}
"""Every driver function the runtime calls, as ``libcuda`` declares it (outputs first)."""

_ENUM_ARGS = {  # (function, in-parameter position) → cuda.bindings enum class name
    ("cuDeviceGetAttribute", 0): "CUdevice_attribute",
    ("cuFuncGetAttribute", 0): "CUfunction_attribute",
    ("cuFuncSetAttribute", 1): "CUfunction_attribute",
}


class CtypesBackend:
    """``libcuda`` through ctypes: out-parameters allocated here, every symbol's types declared."""

    name = "ctypes"

    def __init__(self, lib: Any = None) -> None:
        if lib is None:
            path = os.environ.get("AMK_LIBCUDA", "libcuda.so.1")
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise CudaUnavailable(f"the CUDA driver library {path} cannot be loaded ({exc})") from exc
        self.lib = lib
        self._functions: dict[str, Callable[..., int]] = {}

    def _function(self, name: str) -> Callable[..., int]:
        if name not in self._functions:
            symbols, outs, ins = SIGNATURES[name]
            found = next((getattr(self.lib, s) for s in symbols if hasattr(self.lib, s)), None)
            if found is None:
                raise CudaUnavailable(f"the CUDA driver has none of {', '.join(symbols)}")
            found.argtypes = [ctypes.POINTER(t) for t in outs] + list(ins)
            found.restype = ctypes.c_int
            self._functions[name] = found
        return self._functions[name]

    def raw(self, name: str, *args: Any) -> tuple[Any, ...]:
        """``(CUresult, *out values)`` of one call."""
        if name == "cuDeviceGetName":
            buf = ctypes.create_string_buffer(256)
            fn = self.lib.cuDeviceGetName
            fn.argtypes, fn.restype = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int], ctypes.c_int
            return (int(fn(buf, 256, args[0])), buf.value)
        outs = [t() for t in SIGNATURES[name][1]]
        rc = self._function(name)(*[ctypes.byref(o) for o in outs], *args)
        return (int(rc), *(o.value for o in outs))

    def error_name(self, code: int) -> str:
        text = ctypes.c_char_p()
        fn = getattr(self.lib, "cuGetErrorName", None)
        if fn is None:
            return "CUDA_ERROR_UNKNOWN"
        fn.argtypes, fn.restype = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int
        if fn(code, ctypes.byref(text)) != SUCCESS or not text.value:
            return "CUDA_ERROR_UNKNOWN"
        return text.value.decode()


class PycudaBackend(CtypesBackend):
    """PyCUDA initialises the driver; the calls are the ctypes backend's (same primary context)."""

    name = "pycuda"

    def __init__(self, lib: Any = None) -> None:
        try:
            import pycuda.driver as drv
        except ImportError as exc:
            raise CudaUnavailable("pycuda is not installed") from exc
        try:
            drv.init()
        except drv.Error as exc:
            raise CudaUnavailable(f"PyCUDA cannot initialise the CUDA driver ({exc})") from exc
        super().__init__(lib)


class BindingsBackend:
    """NVIDIA's ``cuda.bindings.driver``: handles are its objects, enums converted here."""

    name = "cuda-bindings"

    def __init__(self, module: Any = None) -> None:
        if module is None:
            try:
                from cuda.bindings import driver as nv
            except ImportError as exc:
                raise CudaUnavailable("cuda-bindings is not installed (pip install cuda-bindings)") from exc
            module = nv
        self.module = module

    def raw(self, name: str, *args: Any) -> tuple[Any, ...]:
        converted = [
            getattr(self.module, _ENUM_ARGS[(name, i)])(a) if (name, i) in _ENUM_ARGS else a
            for i, a in enumerate(args)
        ]
        if name == "cuDeviceGetName":
            converted = [256, *converted]
        try:
            result = getattr(self.module, name)(*converted)
        except (TypeError, ValueError, OverflowError):
            raise
        except Exception as exc:
            raise CudaUnavailable(f"{name}: the CUDA driver cannot be used ({exc})") from exc
        if not isinstance(result, tuple):
            result = (result,)
        code, *values = result
        if name == "cuDeviceGetName" and values:
            values = [bytes(values[0]).split(b"\0", 1)[0]]
        return (int(code), *values)

    def error_name(self, code: int) -> str:
        try:
            rc, text = self.module.cuGetErrorName(self.module.CUresult(code))
        except Exception:  # noqa: BLE001 - an unknown code
            return "CUDA_ERROR_UNKNOWN"
        return text.decode() if int(rc) == SUCCESS and text else "CUDA_ERROR_UNKNOWN"


class Driver:
    """The checked facade: ``call(name, *args)`` returns the out values or raises :class:`DriverError`."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name: str = backend.name

    def call(self, name: str, *args: Any) -> Any:
        """One driver call: its single out value, a tuple of several, or None."""
        code, *values = self.backend.raw(name, *args)
        if code != SUCCESS:
            raise DriverError(name, code, self.backend.error_name(code))
        return values[0] if len(values) == 1 else (tuple(values) if values else None)

    def query(self, name: str, *args: Any) -> int:
        """A call whose CUresult is the answer (``cuEventQuery``): SUCCESS or NOT_READY, else raised."""
        code = self.backend.raw(name, *args)[0]
        if code not in (SUCCESS, NOT_READY):
            raise DriverError(name, code, self.backend.error_name(code))
        return code

    def attribute(self, name: str, device: Any) -> int:
        """``cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_<name>)``."""
        return int(self.call("cuDeviceGetAttribute", ATTR[name], device))

    def func_attribute(self, name: str, function: Any) -> int:
        """``cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_<name>)``."""
        return int(self.call("cuFuncGetAttribute", FUNC_ATTR[name], function))


_FACTORIES: dict[str, Callable[[], Any]] = {
    "cuda-bindings": BindingsBackend,
    "pycuda": PycudaBackend,
    "ctypes": CtypesBackend,
}


def open_driver(order: Sequence[str] | None = None) -> Driver:
    """The first backend of ``order`` (``$AMK_CUDA_BACKEND``, else :data:`BACKENDS`) that loads and
    initialises the driver with a device; else :class:`CudaUnavailable` with every reason."""
    forced = os.environ.get("AMK_CUDA_BACKEND")
    names = list(order or ([forced] if forced else BACKENDS))
    reasons = []
    for name in names:
        if name not in _FACTORIES:
            raise CudaUnavailable(f"unknown CUDA backend {name!r} (one of {', '.join(BACKENDS)})")
        try:
            driver = Driver(_FACTORIES[name]())
            driver.call("cuInit", 0)
            if driver.call("cuDeviceGetCount") < 1:
                raise CudaUnavailable("the CUDA driver reports no GPU")
            return driver
        except CudaUnavailable as exc:
            reasons.append(f"{name}: {exc}")
    raise CudaUnavailable("; ".join(reasons))
