"""Tables of the data-model, schedule-config and JSON chapters (spec §1, §5, §6, §8).

Every function returns ``(headers, rows)`` built from :mod:`amkspec.ir` at build time.
"""

from __future__ import annotations

import enum
import json
import typing
from typing import Any

import attrs

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    ABI_VERSION,
    IR_VERSION,
    ON_CHIP_SPACES,
    OP_REGISTRY,
    PARAM_DEFAULTS,
    PARAM_FIELDS,
    PARAM_LAYOUT,
    READONLY_KINDS,
    TARGETS,
    Buffer,
    BufferKind,
    Counter,
    DType,
    GpuTarget,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ScheduleConfig,
    Task,
    Wait,
)
from amkspec.ir.jsonio import REQUIRED_TOP_LEVEL
from amkspec.ir.opcodes import VARIADIC

Table = tuple[list[str], list[list[str]]]

_PARAM_TYPES = {"i": "int32", "f": "float32"}


def _code(text: object) -> str:
    return f"``{text}``"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def dtypes() -> Table:
    """DType names, ABI codes, storage bits and the bytes of 1 and 3 elements (§1.2)."""
    rows = [
        [_code(d.name), str(d.value), str(d.bits), str(d.nbytes(1)), str(d.nbytes(3)),
         "float" if d.is_float else ("integer" if d.is_integer else "boolean")]
        for d in DType
    ]
    return ["DType", "Code", "Bits", "Bytes of 1", "Bytes of 3", "Class"], rows


def mem_spaces() -> Table:
    """MemSpace names and codes, and whether the space is private to one SM (§1.2, §1.6)."""
    rows = [[_code(m.name), str(m.value), _yes(m in ON_CHIP_SPACES)] for m in MemSpace]
    return ["MemSpace", "Code", "On-chip (one SM only)"], rows


def buffer_kinds() -> Table:
    """BufferKind names and codes, and whether reading needs no producer (§1.2, §1.6)."""
    rows = [[_code(k.name), str(k.value), _yes(k in READONLY_KINDS)] for k in BufferKind]
    return ["BufferKind", "Code", "Read-only (needs no producer)"], rows


def _inputs(lo: int, hi: int) -> str:
    if hi == VARIADIC:
        return f"{lo}..{ABI_MAX_INPUTS}"
    return str(lo) if lo == hi else f"{lo}..{hi}"


def opcodes() -> Table:
    """InstructionKind codes with their OP_REGISTRY arity and required params (§1.2, §7)."""
    rows = []
    for kind in InstructionKind:
        spec = OP_REGISTRY[kind]
        params = ", ".join(_code(p) for p in spec.required_params) or "none"
        rows.append([_code(kind.name), str(kind.value), _inputs(spec.min_inputs, spec.max_inputs),
                     str(spec.n_outputs), params, spec.note])
    return ["Opcode", "Code", "Inputs", "Outputs", "Required params", "Meaning"], rows


def param_fields() -> Table:
    """Every ABI param: type, byte offset in ``amk_params_t`` and defaults by opcode (§7, §8)."""
    defaults: dict[str, list[str]] = {}
    for kind, values in PARAM_DEFAULTS.items():
        for name, value in values.items():
            defaults.setdefault(name, []).append(f"{value!r} ({kind.name})")
    rows = [
        [_code(name), _PARAM_TYPES[PARAM_FIELDS[name]], str(4 * index), "; ".join(defaults.get(name, []))]
        for index, name in enumerate(PARAM_LAYOUT)
    ]
    return ["Param", "Type", "Byte offset", "Default applied by the numerics"], rows


def abi_constants() -> Table:
    """Versions and the capacities every implementation shares with the device ABI (§8)."""
    rows = [
        [_code("IR_VERSION"), _code(json.dumps(IR_VERSION)), "on-disk format version"],
        [_code("ABI_VERSION"), _code(json.dumps(ABI_VERSION)), "device ABI version"],
        [_code("ABI_MAX_INPUTS"), str(ABI_MAX_INPUTS), "inputs per task"],
        [_code("ABI_MAX_OUTPUTS"), str(ABI_MAX_OUTPUTS), "outputs per task"],
        [_code("ABI_MAX_WAITS"), str(ABI_MAX_WAITS), "waits per task"],
        [_code("ABI_MAX_RANK"), str(ABI_MAX_RANK), "dimensions per buffer"],
        [_code("amk_params_t"), f"{4 * len(PARAM_LAYOUT)} bytes", f"{len(PARAM_LAYOUT)} fields of 4 bytes"],
    ]
    return ["Name", "Value", "Meaning"], rows


def _type_name(tp: Any) -> str:
    """A short, readable rendering of a field's type hint."""
    text = str(tp) if not isinstance(tp, type) else tp.__name__
    for module in ("typing.", "amkspec.ir.model.", "amkspec.ir.enums.", "amkspec.ir.targets."):
        text = text.replace(module, "")
    return text.replace("NoneType", "None")


def _default(field: attrs.Attribute[Any]) -> str:
    default = field.default
    if default is attrs.NOTHING:
        return "required"
    factory = getattr(default, "factory", None)
    value = factory() if factory is not None else default
    if isinstance(value, enum.Enum):
        return _code(value.name)
    return _code(json.dumps(list(value) if isinstance(value, tuple) else value))


def _fields(cls: type) -> Table:
    hints = typing.get_type_hints(cls)
    rows = [
        [_code(f.name), _code(_type_name(hints[f.name])), _default(f)]
        for f in attrs.fields(cls)
        if f.name != "extra"
    ]
    return ["Field", "Type", "Default"], rows


def program_fields() -> Table:
    """MegakernelProgram fields in on-disk key order (§1, §6)."""
    headers, rows = _fields(MegakernelProgram)
    for row in rows:
        if row[0].strip("`") in REQUIRED_TOP_LEVEL:
            row[2] = "required (may be empty)"
    return headers, rows


def buffer_fields() -> Table:
    """Buffer fields (§1.3)."""
    return _fields(Buffer)


def task_fields() -> Table:
    """Task fields (§1.4)."""
    return _fields(Task)


def counter_wait_fields() -> Table:
    """Counter and Wait fields (§1.5)."""
    h, counters = _fields(Counter)
    _, waits = _fields(Wait)
    return ["Record", *h], [["Counter", *r] for r in counters] + [["Wait", *r] for r in waits]


def page_fields() -> Table:
    """Page and PageAllocation fields (§1.6)."""
    h, pages = _fields(Page)
    _, allocs = _fields(PageAllocation)
    return ["Record", *h], [["PageAllocation", *r] for r in allocs] + [["Page", *r] for r in pages]


def schedule_config_fields() -> Table:
    """ScheduleConfig fields and defaults (§5)."""
    return _fields(ScheduleConfig)


def gpu_target_fields() -> Table:
    """GpuTarget fields (§5.2)."""
    return _fields(GpuTarget)


def builtin_targets() -> Table:
    """The eight built-in targets and their decode floors for 1 GB of weights (§5.2)."""
    rows = []
    for t in TARGETS.values():
        measured = f"{t.measured_bw_gbs:g}" if t.measured_bw_gbs > 0 else "n/a"
        rows.append([
            _code(t.name), f"sm_{t.sm_arch}", str(t.num_sms), str(t.smem_bytes_per_block_optin),
            f"{t.l2_bytes >> 20} MiB", f"{t.hbm_bandwidth_gbs:g}", measured, f"{t.fp16_tflops:g}",
            _yes(t.wddm_tdr), f"{t.bandwidth_bound_us(10**9):.1f}",
            f"{t.measured_bandwidth_bound_us(10**9):.1f}",
        ])
    headers = ["Name", "Arch", "SMs", "SMEM opt-in / block (B)", "L2", "HBM GB/s", "Measured GB/s",
               "FP16 TFLOP/s", "WDDM TDR", "Floor for 1 GB (µs)", "Measured floor (µs)"]
    return headers, rows


def cli_commands() -> Table:
    """Every ``amkspec`` subcommand with the first line of its help."""
    from amkspec.cli import main

    rows = [
        [_code(f"amkspec {name}"), command.get_short_help_str(limit=100)]
        for name, command in sorted(main.commands.items())
    ]
    return ["Command", "What it does"], rows
