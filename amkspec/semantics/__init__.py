"""Reference numerics of every opcode (spec §7), in torch.

``OP_SEMANTICS[kind](inputs, outputs, params)`` runs one task: it reads the
bound input tensors and writes **into** the output tensors (tile writes touch
only their slice). Operands are converted to float32, computed in float32 and
cast once to the output dtype. :data:`SEMANTICS` carries each opcode's
description (operands, params and defaults, shapes, formula) for the spec site.
"""

from __future__ import annotations

from amkspec.ir import InstructionKind
from amkspec.semantics import attention, elementwise, fused, linear, movement, norm, quant
from amkspec.semantics.dtypes import empty_storage, storage_shape, torch_dtype
from amkspec.semantics.quant import QuantizedWeight, dequantize, pack_int4, quantize, unpack_int4
from amkspec.semantics.registry import FAMILIES, SEMANTICS, OpError, OpFn, OpSemantics

OP_SEMANTICS: dict[InstructionKind, OpFn] = {kind: SEMANTICS[kind].fn for kind in InstructionKind}
"""Opcode → reference function ``fn(inputs, outputs, params) -> None`` (all 20 opcodes)."""

del attention, elementwise, fused, linear, movement, norm, quant

__all__ = [
    "FAMILIES", "OP_SEMANTICS", "SEMANTICS", "OpError", "OpFn", "OpSemantics", "QuantizedWeight",
    "dequantize", "empty_storage", "pack_int4", "quantize", "storage_shape", "torch_dtype",
    "unpack_int4",
]
