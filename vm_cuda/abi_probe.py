"""What ``abi.h`` says, as the compiler sees it (spec §8.1): the ABI drift probe.

:func:`probe` compiles a host C++ program that includes ``abi.h`` and prints the
``sizeof``/``offsetof`` of every field of every record and the value of every enum
constant and macro that :func:`expected_constants` names; the result is compared with
``amkspec.ir`` and :mod:`vm_cuda.layout` by the drift test, and rendered on the spec site.
:func:`header_constants` lists the names the header itself declares (so an extra or
missing enumerator is caught too).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    ABI_VERSION,
    MAX_THREADS_PER_BLOCK,
    WARP,
    AttentionFlags,
    BufferKind,
    DType,
    FusedPattern,
    InstructionKind,
    MemSpace,
    QuantFlags,
)
from vm_cuda import layout
from vm_cuda.build import SOURCE_DIR, BuildError, compiler

ENUM_PREFIXES: dict[str, tuple[str, dict[str, int]]] = {
    "amk_opcode_t": ("AMK_OP_", {k.name: int(k) for k in InstructionKind}),
    "amk_dtype_t": ("AMK_DT_", {**{d.name: int(d) for d in DType}, "F64": layout.DT_F64}),
    "amk_space_t": ("AMK_SPACE_", {m.name: int(m) for m in MemSpace}),
    "amk_kind_t": ("AMK_KIND_", {k.name: int(k) for k in BufferKind}),
    "amk_fused_pattern_t": ("AMK_FUSED_", {p.name: int(p) for p in FusedPattern}),
    "amk_flag_t": ("AMK_FLAG_", {**{f.name or "": int(f) for f in AttentionFlags},
                                 **{f"QUANT_{f.name}": int(f) for f in QuantFlags}}),
    "amk_abort_t": ("AMK_ABORT_", dict(layout.ABORT_CODES)),
}
"""C enum → (constant prefix, name → value as amkspec.ir / vm_cuda.layout define it)."""


def expected_constants() -> dict[str, int]:
    """Every enum constant and macro of ``abi.h`` with the value it must have."""
    major, minor = (int(p) for p in ABI_VERSION.split("."))
    out = {
        "AMK_MAX_INPUTS": ABI_MAX_INPUTS,
        "AMK_MAX_OUTPUTS": ABI_MAX_OUTPUTS,
        "AMK_MAX_WAITS": ABI_MAX_WAITS,
        "AMK_MAX_RANK": ABI_MAX_RANK,
        "AMK_WARP": WARP,
        "AMK_OP_MAX_THREADS": MAX_THREADS_PER_BLOCK,
        "AMK_ABI_VERSION_MAJOR": major,
        "AMK_ABI_VERSION_MINOR": minor,
        "AMK_IMAGE_MAGIC": layout.IMAGE_MAGIC,
        "AMK_IMAGE_ALIGN": layout.IMAGE_ALIGN,
        "AMK_N_OPCODES": len(InstructionKind),
    }
    for prefix, values in ENUM_PREFIXES.values():
        out.update({prefix + name: value for name, value in values.items()})
    return out


def header_constants() -> dict[str, list[str]]:
    """Enum name → its enumerators as written in ``abi.h`` (parsed, not compiled)."""
    text = (SOURCE_DIR / "abi.h").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return {
        m.group(1): re.findall(r"\b(AMK_\w+)\s*=", m.group(2))
        for m in re.finditer(r"enum\s+(\w+)\s*\{(.*?)\}", text, flags=re.S)
    }


def _fields(dtype: Any) -> list[str]:
    return list(dtype.names)


def probe_source() -> str:
    """The probe program: prints one JSON object of sizes, offsets and constants."""
    lines = [
        '#include "abi.h"',
        "#include <cstddef>",
        "#include <cstdio>",
        "int main() {",
        '  std::printf("{\\"records\\": {");',
    ]
    for i, (struct, dtype) in enumerate(layout.RECORDS.items()):
        sep = "," if i else ""
        lines.append(
            f'  std::printf("{sep}\\"{struct}\\": {{\\"size\\": %zu, \\"fields\\": {{", sizeof({struct}));'
        )
        for j, name in enumerate(_fields(dtype)):
            fsep = "," if j else ""
            lines.append(
                f'  std::printf("{fsep}\\"{name}\\": [%zu, %zu]", offsetof({struct}, {name}), '
                f"sizeof((({struct}*)0)->{name}));"
            )
        lines.append('  std::printf("}}");')
    lines.append('  std::printf("}, \\"constants\\": {");')
    for i, name in enumerate(expected_constants()):
        sep = "," if i else ""
        lines.append(f'  std::printf("{sep}\\"{name}\\": %lld", (long long)({name}));')
    lines += ['  std::printf("}}\\n");', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


@cache
def probe() -> dict[str, Any]:
    """Compile and run the probe: ``{"records": {struct: {"size", "fields": {name: [offset, size]}}},
    "constants": {name: value}}``."""
    cxx = compiler()
    with tempfile.TemporaryDirectory(prefix="amk_probe_") as tmp:
        src, exe = Path(tmp) / "probe.cpp", Path(tmp) / "probe"
        src.write_text(probe_source())
        built = subprocess.run(
            [cxx, "-std=c++17", "-Wall", "-Werror", "-I", str(SOURCE_DIR), str(src), "-o", str(exe)],
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            raise BuildError(f"the ABI probe does not compile:\n{built.stderr[-4000:]}")
        ran = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(ran.stdout)
    return result
