"""Tables of chapter 8 (CUDA ABI and execution), generated at build time from ``vm_cuda/abi.h``.

Sizes, offsets and enum values come from :func:`vm_cuda.abi_probe.probe`, which compiles a host
C++ program including the header and prints them, so the site shows what the compiler sees; the
field types come from :mod:`vm_cuda.layout` (the packer's view, which the drift test pins to it).
"""

from __future__ import annotations

from typing import Any

from vm_cuda import layout
from vm_cuda.abi_probe import ENUM_PREFIXES, probe
from vm_cuda.build import VARIANTS
from vm_cuda.compare import tolerance
from vm_cuda.status import fault_names

Table = tuple[list[str], list[list[str]]]
_KINDS = {"i": "int", "u": "uint", "f": "float"}


def _ctype(sub: Any) -> str:
    base = sub.base if sub.shape else sub
    if base.kind == "V":
        name = next(k for k, v in layout.RECORDS.items() if v == base)
    elif base.kind == "f":
        name = f"float{base.itemsize * 8}"
    else:
        name = f"{_KINDS[base.kind]}{base.itemsize * 8}_t"
    return name + "".join(f"[{n}]" for n in sub.shape)


def _record(struct: str) -> Table:
    compiled = probe()["records"][struct]
    fields: Any = layout.RECORDS[struct].fields
    rows = []
    for name, (off, size) in compiled["fields"].items():
        ctype = "void*" if name == "ptr" else _ctype(fields[name][0])
        rows.append([f"``{name}``", f"``{ctype}``", str(off), str(size)])
    rows.append(["(total)", "", "", f"**{compiled['size']}**"])
    return ["Field", "Type", "Offset", "Bytes"], rows


def header() -> Table:
    """``amk_image_header_t``."""
    return _record("amk_image_header_t")


def status() -> Table:
    """``amk_status_t``."""
    return _record("amk_status_t")


def buffer() -> Table:
    """``amk_buffer_t``."""
    return _record("amk_buffer_t")


def instruction() -> Table:
    """``amk_instruction_t``."""
    return _record("amk_instruction_t")


def params() -> Table:
    """``amk_params_t``."""
    return _record("amk_params_t")


def enums() -> Table:
    """Every enum of the header with its constants' values (as compiled)."""
    constants = probe()["constants"]
    rows = []
    for enum, (prefix, values) in ENUM_PREFIXES.items():
        names = sorted(values, key=lambda n: values[n])
        rows.append([f"``{enum}``", ", ".join(f"``{prefix}{n}`` = {constants[prefix + n]}" for n in names)])
    return ["Enum", "Constants"], rows


def macros() -> Table:
    """Capacities, version and image constants (as compiled)."""
    constants = probe()["constants"]
    enum_names = {prefix + n for prefix, values in ENUM_PREFIXES.values() for n in values}
    rows = [
        [f"``{k}``", f"{v:#x}" if k == "AMK_IMAGE_MAGIC" else str(v)]
        for k, v in constants.items()
        if k not in enum_names
    ]
    return ["Macro", "Value"], rows


def faults() -> Table:
    """``AMK_FAULT_*`` codes an opcode returns (defined with the opcodes in ``vm_cuda/ops``)."""
    rows = [[str(code), f"``AMK_FAULT_{name}``"] for code, name in sorted(fault_names().items())]
    return ["Code", "Name"], rows


def tolerances() -> Table:
    """Kernel-vs-ReferenceVM tolerances by output dtype (:func:`vm_cuda.compare.tolerance`)."""
    import torch

    rows = []
    for name, dtype in (
        ("F32", torch.float32),
        ("F16", torch.float16),
        ("BF16", torch.bfloat16),
        ("I32, I8, U8, BOOL (packed I4)", torch.int32),
    ):
        atol, rtol = tolerance(dtype)
        rows.append([name, "exact" if atol == rtol == 0 else f"atol {atol:g}, rtol {rtol:g}"])
    return ["Output dtype", "Tolerance (``|kernel − ref| ≤ atol + rtol·|ref|``)"], rows


def variants() -> Table:
    """The CPU build variants and their compiler flags."""
    return ["Variant", "Flags"], [[f"``{k}``", " ".join(f"``{f}``" for f in v)] for k, v in VARIANTS.items()]
