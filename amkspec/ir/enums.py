"""Canonical enums, versions and ABI capacities (spec §1.2, §8).

The numeric codes are the ABI codes mirrored in ``vm/abi.h``; they are
append-only and never renumbered.
"""

from __future__ import annotations

import enum

IR_VERSION = "0.2.0"
"""On-disk format version (spec §6)."""
ABI_VERSION = "0.2"
"""On-device ABI version (spec §8)."""

ABI_MAX_INPUTS = 8
ABI_MAX_OUTPUTS = 4
ABI_MAX_WAITS = 8
ABI_MAX_RANK = 4

WARP = 32
"""Threads per warp: ``threads_per_block`` is a whole number of warps (spec §5.1, O503)."""
MAX_THREADS_PER_BLOCK = 1024
"""The largest block the device ops accept (spec §5.1, §8.7)."""


class DType(enum.IntEnum):
    """Element types (spec §1.2). ``I4`` is packed two per byte."""

    F32 = 0
    F16 = 1
    BF16 = 2
    F8E4M3 = 3
    F8E5M2 = 4
    I32 = 5
    I8 = 6
    I4 = 7
    U8 = 8
    BOOL = 9

    @property
    def bits(self) -> int:
        """Storage width of one element in bits."""
        return _DTYPE_BITS[self]

    def nbytes(self, count: int) -> int:
        """Bytes needed for ``count`` elements, rounded up for sub-byte types."""
        return (count * self.bits + 7) // 8

    @property
    def is_float(self) -> bool:
        """A floating-point dtype (spec §1.2)."""
        return self in _FLOAT_DTYPES

    @property
    def is_integer(self) -> bool:
        """An integer dtype, packed I4 included (spec §1.2)."""
        return self in INTEGER_DTYPES


_DTYPE_BITS = {
    DType.F32: 32, DType.F16: 16, DType.BF16: 16, DType.F8E4M3: 8, DType.F8E5M2: 8,
    DType.I32: 32, DType.I8: 8, DType.I4: 4, DType.U8: 8, DType.BOOL: 8,
}
_FLOAT_DTYPES = frozenset({DType.F32, DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2})
INTEGER_DTYPES = frozenset({DType.I32, DType.I8, DType.I4, DType.U8})
"""The integer dtypes, packed I4 included (spec §1.2): :attr:`DType.is_integer` reads this set."""


class MemSpace(enum.IntEnum):
    """Where a buffer lives (spec §1.2, §1.6)."""

    HBM = 0
    GLOBAL_SCRATCH = 1
    SMEM = 2
    REGISTER = 3


class BufferKind(enum.IntEnum):
    """Role of a buffer in a forward pass (spec §1.2, §1.6)."""

    WEIGHT = 0
    ACTIVATION = 1
    KV_CACHE = 2
    IO_INPUT = 3
    IO_OUTPUT = 4
    CONST = 5


WEIGHT_KINDS = frozenset({BufferKind.WEIGHT, BufferKind.CONST})
"""Kinds loaded from the state dict (``source``): the decode bandwidth bound (spec §1.3, §5.2)."""

READONLY_KINDS = WEIGHT_KINDS | {BufferKind.IO_INPUT}
"""Kinds that never need a producer edge to be read (spec §1.2)."""

ON_CHIP_SPACES = frozenset({MemSpace.SMEM, MemSpace.REGISTER})
"""Spaces private to one SM: every user must run on the same SM."""


class InstructionKind(enum.IntEnum):
    """The opcodes (spec §7). FUSED=19 exists in the reference code and ABI."""

    NOP = 0
    COPY = 1
    EMBED = 2
    RMSNORM = 3
    LAYERNORM = 4
    GEMV_TILE = 5
    GEMM_TILE = 6
    ATTENTION_TILE = 7
    ROPE = 8
    SILU_MUL = 9
    GELU = 10
    ADD = 11
    MUL = 12
    DEQUANT = 13
    SOFTMAX = 14
    ALLREDUCE_SHARD = 15
    KV_APPEND = 16
    SAMPLE_ARGMAX = 17
    ATTENTION_COMBINE = 18
    FUSED = 19


class FusedPattern(enum.IntEnum):
    """Device pattern ids carried in ``flags`` bits 16-31 of a FUSED task."""

    NONE = 0
    GEMV_ADD = 1


class AttentionFlags(enum.IntFlag):
    """Bits of the ``flags`` param as the reference code uses them (spec §7)."""

    CAUSAL = 1
    PARTIAL_WRITE = 2


class QuantFlags(enum.IntFlag):
    """Bits of the ``flags`` param of a quantized GEMV_TILE / GEMM_TILE / DEQUANT (an amkspec
    extension, spec §7.9). ``AFFINE``: the scale table holds (scale, offset) pairs
    ``[..., n_groups, 2]`` and ``w = level · scale + offset``, the level being the raw nibble (I4)
    or the stored integer (I8) — GGUF's Q4_1 form."""

    AFFINE = 4
