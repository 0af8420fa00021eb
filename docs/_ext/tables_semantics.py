"""Tables of the instruction-semantics chapter (spec §7), generated from ``amkspec.semantics``.

One function per op family; each row joins the opcode registry (arity, required
params) with the reference function's registered description.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from amkspec.ir import OP_REGISTRY, InstructionKind
from amkspec.ir.opcodes import VARIADIC
from amkspec.semantics import SEMANTICS
from amkspec.semantics.edges import EDGE_CASES

Table = tuple[list[str], list[list[str]]]
HEADERS = ["Opcode", "Inputs", "Outputs", "Params (defaults)", "Shapes", "Formula"]


def _arity(kind: InstructionKind) -> str:
    spec = OP_REGISTRY[kind]
    hi = "8" if spec.max_inputs == VARIADIC else str(spec.max_inputs)
    return str(spec.min_inputs) if hi == str(spec.min_inputs) else f"{spec.min_inputs}–{hi}"


def _cell(text: str) -> str:
    return text.replace("*", r"\*").replace("|", r"\|").replace("_", r"\_")


def _row(kind: InstructionKind) -> list[str]:
    sem = SEMANTICS[kind]
    required = OP_REGISTRY[kind].required_params
    req = f"registry requires: ``{', '.join(required)}``. " if required else ""
    return [
        f"``{kind.name}`` ({int(kind)})",
        f"{_arity(kind)}: {_cell(sem.inputs)}",
        _cell(sem.outputs),
        req + _cell(sem.params),
        _cell(sem.shapes),
        _cell(sem.formula),
    ]


def _family(name: str) -> Callable[[], Table]:
    def table() -> Table:
        return HEADERS, [_row(k) for k in InstructionKind if SEMANTICS[k].family == name]

    table.__doc__ = f"The {name} opcodes."
    return table


data_movement = _family("Data movement")
normalisation = _family("Normalisation")
linear = _family("Linear")
attention = _family("Attention")
elementwise = _family("Elementwise")
quantization = _family("Quantization")
sampling = _family("Sampling")
composite = _family("Composite")


def storage() -> Table:
    """How the reference VM stores each IR dtype."""
    from amkspec.ir import DType
    from amkspec.semantics import torch_dtype

    notes = {
        DType.I4: "two levels per byte; last dim ``ceil(K/2)``; low nibble = even column",
        DType.F8E4M3: "bfloat16 where torch has no float8 types",
        DType.F8E5M2: "bfloat16 where torch has no float8 types",
    }
    rows = [[f"``{d.name}`` ({int(d)})", str(d.bits), f"``{str(torch_dtype(d)).removeprefix('torch.')}``",
             notes.get(d, "")] for d in DType]
    return ["DType", "Bits", "Stored as (torch)", "Note"], rows


def quant_formats() -> Table:
    """The quantized weight formats a program stores (spec §7.7, §7.9): the GGML formats imported
    natively and the symmetric forms ``QuantSpec`` re-quantizes to (group 32 shown)."""
    from amkspec.models.quant import NATIVE_FORMATS, QuantSpec

    formats = [*NATIVE_FORMATS.values(), QuantSpec(4, 32).format, QuantSpec(8, 32).format]
    rows = []
    for f in formats:
        q_shape = "int8 ``[N, K]``"
        if f.qdtype.bits == 4:
            q_shape = "uint8 ``[N, ceil(K/2)]`` (two nibbles a byte, low = even column)"
        level = "q" if f.qdtype.bits == 8 else ("nibble" if f.affine else "(nibble − 8)")
        value = f"{level} · scale + offset" if f.affine else f"{level} · scale"
        table = "(scale, offset) pairs ``[N, K/group, 2]``" if f.affine else "scales ``[N, K/group]``"
        params = ", ".join(f"``{k}`` {v}" for k, v in f.params().items())
        source = "GGUF (native)" if f.name in NATIVE_FORMATS else "``QuantSpec`` (re-quantized)"
        rows.append([f"``{f.name}``", source, f"{f.qdtype.name}: {q_shape}", f"F16 {table}", params,
                     _cell(value)])
    headers = ["Format", "From", "Levels ``key``", "Table ``key.scales``", "Task params", "Weight (float32)"]
    return headers, rows


def _value(v: float) -> str:
    """A table value as the output holds it: inf, -inf, NaN, -0, integers without a point."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v) or v == 0:
        return f"{'-' if math.copysign(1.0, v) < 0 else ''}{'inf' if math.isinf(v) else '0'}"
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:g}"


def _values(vs: tuple[float, ...]) -> str:
    return "``[" + ", ".join(_value(v) for v in vs) + "]``"


def edge_values() -> Table:
    """The edge-value table of §7.10 (``amkspec.semantics.edges.EDGE_CASES``), one row per rule."""
    rows = []
    for case in EDGE_CASES:
        name = "w" if case.kind.name.endswith("NORM") else "up"
        other = f"; {name} = {_values(case.other)}" if case.other else ""
        rows.append([f"``{case.kind.name}``", _values(case.x) + other, case.dtype.name, _values(case.out),
                     _cell(case.rule)])
    return ["Opcode", "Input row", "Output dtype", "Result", "Rule"], rows
