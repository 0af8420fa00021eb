"""The CPU build (spec §8.6): cached by a hash of the sources and flags, rebuilt when they change."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vm_cuda import build
from vm_cuda.__main__ import main
from vm_cuda.build import BuildError

REPO = Path(__file__).resolve().parents[2]


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
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # neither entry nor temp file


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


def test_python_m_vm_cuda_reports_an_unusable_cache_in_one_line(
    cxx: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("AMKSPEC_CACHE", str(not_a_dir))
    assert main() == 2
    err = capsys.readouterr().err
    assert err.startswith("vm_cuda: ") and err.count("\n") == 1 and "Not a directory" in err


_SLOW_COMPILER = """#!/bin/sh
[ "$1" = --version ] && { echo slow-fake-compiler 1; exit 0; }
for a; do out=$a; done
echo partial > "$out"
echo $$ > "$PIDFILE"
exec sleep 60
"""


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_sigterm_while_compiling_kills_the_compiler_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """``python3 -m vm_cuda`` killed by SIGTERM mid-compile: exit 143, the compiler gone, nothing in
    the cache (a fake compiler that writes its output and then hangs stands in for g++)."""
    fake, pidfile, cache = tmp_path / "fake-cxx", tmp_path / "pid", tmp_path / "cache"
    fake.write_text(_SLOW_COMPILER)
    fake.chmod(0o755)
    env = {**os.environ, "CXX": str(fake), "AMKSPEC_CACHE": str(cache), "PIDFILE": str(pidfile)}
    proc = subprocess.Popen([sys.executable, "-m", "vm_cuda"], cwd=REPO, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    compiler_pid = int(pidfile.read_text())
    try:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
        assert not _running(compiler_pid)
        assert not [p for p in cache.rglob("*") if p.is_file()]
        assert rc == 128 + signal.SIGTERM
    finally:
        if _running(compiler_pid):
            os.kill(compiler_pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
