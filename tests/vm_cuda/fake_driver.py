"""The stand-in CUDA driver of the runtime tests: ``fake_libcuda.cpp`` built against NVIDIA's
``cuda.h`` (its real prototypes and exported symbols), and a ``cuda.bindings.driver``-shaped module
that answers through the same library (so both backends meet the same device)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from vm_cuda.build import build_library, cache_root, compiler, nvcc

SOURCE = Path(__file__).with_name("fake_libcuda.cpp")


def cuda_include() -> Path | None:
    """The folder holding NVIDIA's ``cuda.h`` (next to nvcc), or None."""
    tool = nvcc()
    candidates = [os.environ.get("CUDA_HOME", "/usr/local/cuda")]
    if tool is not None:
        candidates.append(str(Path(os.path.realpath(tool)).parent.parent))
    found = [Path(c) / "include" for c in candidates if (Path(c) / "include" / "cuda.h").exists()]
    return found[0] if found else None


@cache
def fake_library() -> Path:
    """The stand-in ``libcuda`` (built once per source), with the CPU build as its kernel."""
    include = cuda_include()
    assert include is not None, "cuda.h not found (nvcc's include folder)"
    key = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = cache_root() / "fake_libcuda" / key / "libcuda_fake.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(
            [compiler(), "-std=c++17", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I", str(include),
             str(SOURCE), "-o", str(tmp), "-ldl", "-pthread"],
            check=True, capture_output=True, text=True,
        )
        os.replace(tmp, out)
    return out


def load_fake() -> ctypes.CDLL:
    """The stand-in driver, reset, its launches running the release CPU build."""
    lib = ctypes.CDLL(str(fake_library()))
    lib.fake_log.restype = ctypes.c_char_p
    lib.fake_inject.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.fake_reset()
    assert lib.fake_set_kernel(str(build_library("release")).encode()) == 0
    return lib


def calls(lib: ctypes.CDLL) -> list[str]:
    """The recorded calls, one ``name args`` line each."""
    return (lib.fake_log() or b"").decode().splitlines()


class FakeBindings:
    """``cuda.bindings.driver`` as the runtime uses it, answering through the stand-in library:
    handles are ints, enums are ints, every function returns ``(CUresult, *values)``."""

    CUdevice_attribute = int
    CUfunction_attribute = int
    CUresult = int

    def __init__(self, lib: ctypes.CDLL) -> None:
        from vm_cuda.driver import CtypesBackend

        self._ctypes = CtypesBackend(lib)
        self.names: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args: Any) -> tuple[Any, ...]:
            self.names.append(name)
            if name == "cuGetErrorName":
                text = self._ctypes.error_name(int(args[0]))
                return (0, text.encode()) if text != "CUDA_ERROR_UNKNOWN" else (1, None)
            if name == "cuDeviceGetName":
                args = args[1:]
            return self._ctypes.raw(name, *args)

        return call
