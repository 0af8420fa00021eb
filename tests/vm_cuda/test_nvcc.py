"""nvcc builds the megakernel for sm_80 and sm_90, -Werror clean (spec §8.7); ptxas's resource
report is kept next to each cubin in the build cache (and parsed here); a failed build caches nothing."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from vm_cuda import build
from vm_cuda.build import BuildError, build_cubin, nvcc

ARCHS = ("sm_80", "sm_90")
pytestmark = pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed (set $NVCC or $CUDA_HOME)")


def resources(report: str) -> dict[str, int]:
    """Registers, stack frame and spill bytes of ``amk_megakernel`` from ptxas -v."""
    entry = report[report.index("Compiling entry function 'amk_megakernel'") :]
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", entry)
    regs = re.search(r"Used (\d+) registers", entry)
    assert frame is not None and regs is not None, entry[:2000]
    return {
        "registers": int(regs.group(1)),
        "stack": int(frame.group(1)),
        "spill_stores": int(frame.group(2)),
        "spill_loads": int(frame.group(3)),
    }


def test_nvcc_builds_both_architectures_werror_clean() -> None:
    with ThreadPoolExecutor(len(ARCHS)) as pool:  # ptxas runs in a subprocess: the two builds overlap
        built = dict(zip(ARCHS, pool.map(build_cubin, ARCHS), strict=True))
    for arch, (cubin, report) in built.items():
        assert cubin.read_bytes()[:4] == b"\x7fELF", arch
        assert f"for '{arch}'" in report
        usage = resources(report)
        assert 0 < usage["registers"] <= 255, usage
        print(f"{arch}: {usage}")  # shown with pytest -s; the full report is {cubin}.ptxas.txt


def test_a_failed_nvcc_build_leaves_no_cubin_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    shutil.copytree(build.SOURCE_DIR, src, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (src / "megakernel.cu").write_text((src / "megakernel.cu").read_text() + "\nthis is not CUDA;\n")
    monkeypatch.setattr(build, "SOURCE_DIR", src)
    monkeypatch.setenv("AMKSPEC_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BuildError, match="nvcc for sm_80 failed") as info:
        build_cubin("sm_80")
    assert "this is not" in str(info.value)
    assert [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []
