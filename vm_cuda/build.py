"""Building the CPU build of the megakernel (spec §8.6).

``megakernel.cu`` is compiled by a host C++ compiler (``$CXX``, else g++, else clang++)
as C++20 with ``host_shim.h`` into a shared library (loaded with ctypes) or, for the
sanitizer runs, a standalone driver executable (``cpu_driver.cpp``: image file in, image
file out). Outputs live in a cache directory (``$AMKSPEC_CACHE``, else
``~/.cache/amkspec``) under a key hashing every kernel source, the flags and the
compiler's version, so a changed source rebuilds and an unchanged one is reused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from amkspec.ir import MAX_THREADS_PER_BLOCK, AmkspecError
from amkspec.ir.atomic import write_atomic

SOURCE_DIR = Path(__file__).resolve().parent
"""``vm_cuda/``: the kernel sources (also shipped as package data)."""

# No -Werror here: host compilers differ in their false positives (-Wmaybe-uninitialized at -O2),
# and a warning must not take the CPU build away; the nvcc build is the -Werror gate (test_nvcc).
COMMON_FLAGS = ("-std=c++20", "-x", "c++", "-pthread", "-Wall", "-Wextra", "-DAMK_CPU_BUILD")
VARIANTS: dict[str, tuple[str, ...]] = {
    "release": ("-O2",),
    "release-wide": ("-O2", f"-DAMK_BLOCK_THREADS={MAX_THREADS_PER_BLOCK}"),
    "tsan": ("-O1", "-g", "-fsanitize=thread"),
    "asan": (
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=undefined",
    ),
}
"""Build variant → its compiler flags: the normal build, the same code as built for blocks of more than
512 threads (the GEMV's unpipelined loads, gemv.cuh), and the two sanitizer builds."""


class BuildError(AmkspecError, RuntimeError):
    """The CPU build could not be compiled (no compiler, or a compile error: the message has its output)."""


def compiler() -> str:
    """The host C++ compiler to use, or :class:`BuildError` if there is none."""
    for name in (os.environ.get("CXX"), "g++", "clang++"):
        if name and shutil.which(name):
            return name
    raise BuildError(
        "no C++ compiler found for the CPU build of vm_cuda (set $CXX, or install g++ or clang++)"
    )


def kernel_sources() -> list[Path]:
    """Every file the kernel's translation unit can include, in a stable order."""
    files = [SOURCE_DIR / n for n in ("abi.h", "host_shim.h", "megakernel.cu", "cpu_driver.cpp")]
    files += sorted((SOURCE_DIR / "ops").glob("*.cuh"))
    return [f for f in files if f.exists()]


def cache_root() -> Path:
    """Where built artefacts are kept."""
    env = os.environ.get("AMKSPEC_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "amkspec"


def _flags(variant: str) -> list[str]:
    if variant not in VARIANTS:
        raise BuildError(f"unknown CPU build variant {variant!r} (one of {sorted(VARIANTS)})")
    return [*COMMON_FLAGS, *VARIANTS[variant]]


@cache
def _version(tool: str) -> str:
    return subprocess.run([tool, "--version"], capture_output=True, text=True, check=False).stdout


def _key(cxx: str, flags: list[str], what: str) -> str:
    h = hashlib.sha256()
    h.update(_version(cxx).encode())
    h.update("\0".join([what, *flags]).encode())
    for f in kernel_sources():
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def _source(name: str) -> list[str]:
    """The include flag and the path of the kernel source ``name``."""
    return ["-I", str(SOURCE_DIR), str(SOURCE_DIR / name)]


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM raises ``SystemExit(143)`` instead of ending the process at
    once, so the ``finally`` clauses below run (only from the main thread, and only where SIGTERM
    still has its default action: a handler someone installed is left alone)."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _compile(cmd: list[str], out: Path, what: str) -> str:
    """Run ``cmd -o TMP`` and rename TMP to ``out`` only on success; the tool's output.

    A cache entry is never half-written, and a failed build, an exception or a SIGTERM while
    compiling leaves nothing behind: the compiler is killed and waited for before TMP is removed
    (otherwise it would go on writing TMP). Only an uncatchable SIGKILL can leave a TMP
    (``<name>.XXXXXXXX`` next to the entry), which no later build reads."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with _sigterm_unwinds():
        tmp: str | None = None
        proc = None
        try:
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name + ".")
            os.close(fd)
            proc = subprocess.Popen(
                [*cmd, "-o", tmp], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            stdout, stderr = proc.communicate()
            if proc.returncode != 0:
                raise BuildError(f"{what} failed ({' '.join(cmd)}):\n{(stdout + stderr)[-4000:]}")
            os.replace(tmp, out)
        finally:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
    return stdout + stderr


def build_library(variant: str = "release") -> Path:
    """The shared library of ``megakernel.cu`` for ``variant``, compiled on first use."""
    cxx = compiler()
    flags = [*_flags(variant), "-shared", "-fPIC"]
    out = cache_root() / "vm_cuda" / _key(cxx, flags, "lib") / f"libamk_megakernel_{variant}.so"
    if not out.exists():
        _compile([cxx, *flags, *_source("megakernel.cu")], out, "compiling the CPU build")
    return out


def build_driver(variant: str) -> Path:
    """The standalone driver (``cpu_driver.cpp`` + the kernel) for ``variant``, compiled on first use."""
    cxx = compiler()
    flags = _flags(variant)
    out = cache_root() / "vm_cuda" / _key(cxx, flags, "driver") / f"amk_driver_{variant}"
    if not out.exists():
        _compile([cxx, *flags, *_source("cpu_driver.cpp")], out, "compiling the CPU driver")
    return out


NVCC_FLAGS = ("-std=c++17", "-O3", "-cubin", "-Werror", "all-warnings", "-Xptxas", "-v", "-x", "cu")
"""nvcc flags of the GPU module (``-arch=sm_XY`` is added per target)."""


def nvcc() -> str | None:
    """The nvcc executable (``$NVCC``, ``nvcc`` on PATH, ``$CUDA_HOME/bin/nvcc``), or None."""
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for name in (os.environ.get("NVCC"), shutil.which("nvcc"), os.path.join(home, "bin", "nvcc")):
        if name and os.path.exists(name):
            return name
    return None


DEFAULT_THREADS_PER_BLOCK = 256
"""Threads per block of a GPU launch when the program's config does not say."""


def cuda_tool(name: str) -> str | None:
    """A CUDA binary tool (``cuobjdump``, ``nvdisasm``): on PATH, next to nvcc, under ``$CUDA_HOME``,
    or from NVIDIA's pip wheels (``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvdisasm``); else None."""
    found = shutil.which(name)
    if found:
        return found
    places = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"]
    tool = nvcc()
    if tool is not None:
        places.append(Path(os.path.realpath(tool)).parent)
    try:
        import nvidia  # the namespace package NVIDIA's CUDA wheels install into

        places += [Path(p) / sub / "bin" for p in nvidia.__path__ for sub in ("cu13", "cu12", "cuda_nvcc")]
    except ImportError:
        pass
    return next((str(p / name) for p in places if (p / name).is_file()), None)


def build_cubin(arch: str, threads_per_block: int = DEFAULT_THREADS_PER_BLOCK) -> tuple[Path, str]:
    """``megakernel.cu`` compiled by nvcc for ``arch`` (e.g. ``"sm_90"``) and one block size: the
    kernel's ``__launch_bounds__(threads_per_block, 1)`` (``-DAMK_BLOCK_THREADS``) bounds its
    registers so a block of that size always fits an SM's register file; the cubin and ptxas's report."""
    tool = nvcc()
    if tool is None:
        raise BuildError("nvcc not found (set $NVCC or $CUDA_HOME) to build the GPU megakernel")
    flags = [*NVCC_FLAGS, f"-arch={arch}", f"-DAMK_BLOCK_THREADS={int(threads_per_block)}"]
    name = f"amk_megakernel_{arch}_t{int(threads_per_block)}.cubin"
    out = cache_root() / "vm_cuda" / _key(tool, flags, "cubin") / name
    log = out.with_suffix(".ptxas.txt")
    if not out.exists() or not log.exists():
        report = _compile([tool, *flags, *_source("megakernel.cu")], out, f"nvcc for {arch}")
        write_atomic(log, report)
    return out, log.read_text()
