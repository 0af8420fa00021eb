"""The CPU build (spec §8.6): cached by a hash of the sources and flags, rebuilt when they change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vm_cuda import build
from vm_cuda.build import BuildError


def _copy_sources(dst: Path) -> None:
    """A copy of the kernel sources (headers, megakernel and opcodes) to edit in a test."""
    shutil.copytree(build.SOURCE_DIR, dst, ignore=shutil.ignore_patterns("*.py", "__pycache__"))


def test_the_library_is_cached_and_rebuilt_when_a_source_changes(
    cxx: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    _copy_sources(src)
    monkeypatch.setattr(build, "SOURCE_DIR", src)
    monkeypatch.setenv("AMKSPEC_CACHE", str(tmp_path / "cache"))
    first = build.build_library()
    assert first.exists() and build.build_library() == first
    stamp = first.stat().st_mtime_ns
    (src / "abi.h").write_text((src / "abi.h").read_text() + "\n/* changed */\n")
    second = build.build_library()
    assert second != first and second.exists()
    assert first.stat().st_mtime_ns == stamp  # the old build is left alone, not rebuilt in place


def test_a_compile_error_is_a_build_error_with_the_compiler_output(
    cxx: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    _copy_sources(src)
    (src / "megakernel.cu").write_text((src / "megakernel.cu").read_text() + "\nthis is not C++;\n")
    monkeypatch.setattr(build, "SOURCE_DIR", src)
    monkeypatch.setenv("AMKSPEC_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BuildError, match="compiling the CPU build failed") as info:
        build.build_library()
    assert "this is not" in str(info.value)
    assert not list((tmp_path / "cache").rglob("*.so"))


def test_no_compiler_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BuildError, match="no C\\+\\+ compiler"):
        build.compiler()


def test_an_unknown_variant_is_refused() -> None:
    with pytest.raises(BuildError, match="unknown CPU build variant"):
        build.build_library("debug-ish")


@pytest.mark.parametrize("source", ["megakernel.cu", "cpu_driver.cpp"])
def test_the_sources_compile_warning_free_with_this_compiler(cxx: str, source: str, tmp_path: Path) -> None:
    """The shipped build keeps warnings non-fatal (host compilers differ in false positives); here,
    with the compiler CI has, every warning of the release flags is an error."""
    flags = [*build._flags("release"), "-Werror", "-c"]
    cmd = [cxx, *flags, *build._source(source), "-o", str(tmp_path / "o")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
