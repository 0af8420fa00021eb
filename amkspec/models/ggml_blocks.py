"""GGML's Q4_1 and Q8_0 blocks ⇄ native quantized weights (spec §7.9).

A GGML row of ``K`` weights is ``K / 32`` blocks. Q8_0: float16 ``d`` then 32 int8 ``q``,
``w = d · q``. Q4_1: float16 ``d``, float16 ``m``, then 16 bytes whose byte ``j`` holds weight
``j`` in its low nibble and weight ``j + 16`` in its high nibble, ``w = d · q + m``. The conversion
only moves bits: the int8 levels and the float16 ``d``/``m`` are copied, the nibbles are re-packed
into the IR's I4 order (low nibble = even column), so :meth:`QuantTensor.dequantize` equals
``gguf.quants.dequantize`` bit for bit. Pure numpy: the ``gguf`` package is not imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from amkspec.models.quant import NATIVE_FORMATS, Q4_1, QuantFormat, QuantTensor

BLOCK = 32
"""Weights per GGML block of these formats (their ``group``)."""
BLOCK_BYTES = {"Q4_1": 20, "Q8_0": 34}
"""Bytes per block of each format."""
GGML_TYPE_CODES = {3: "Q4_1", 8: "Q8_0"}
"""``GGMLQuantizationType`` values of the formats imported natively."""


def _format(kind: Any) -> QuantFormat:
    """The format a GGML type names (its enum member, its code, or its name)."""
    if isinstance(kind, str):
        name: Any = kind
    elif isinstance(getattr(kind, "name", None), str):
        name = kind.name
    else:
        name = GGML_TYPE_CODES.get(kind) if isinstance(kind, int) else None
    if name not in NATIVE_FORMATS:
        shown = getattr(kind, "name", kind)
        raise ValueError(f"GGML type {shown!r} is not imported natively (only {', '.join(NATIVE_FORMATS)}): "
                         "dequantize it instead")
    return NATIVE_FORMATS[name]


def _blocks(fmt: QuantFormat, data: Any, shape: tuple[int, int]) -> np.ndarray:
    """``data`` as ``[N, K / 32, block bytes]`` uint8."""
    n, k = (int(d) for d in shape)
    raw = np.asarray(data)
    if raw.dtype != np.uint8:
        raise ValueError(f"{fmt.name} blocks must be raw uint8 bytes, got {raw.dtype}")
    if n < 1 or k < 1 or k % BLOCK:
        raise ValueError(f"a {fmt.name} weight [{n}, {k}] needs N ≥ 1 and K a positive multiple of {BLOCK}")
    size = BLOCK_BYTES[fmt.name]
    if raw.size != n * (k // BLOCK) * size:
        raise ValueError(f"{raw.size} bytes are not the {n * (k // BLOCK)} blocks of {size} bytes of a "
                         f"{fmt.name} weight [{n}, {k}]")
    return raw.reshape(n, k // BLOCK, size)


def from_blocks(kind: Any, data: Any, shape: tuple[int, int]) -> QuantTensor:
    """The native weight of GGML blocks: ``kind`` is ``"Q4_1"``/``"Q8_0"``, a
    ``GGMLQuantizationType`` or its code; ``data`` the raw bytes (``ReaderTensor.data``, any shape);
    ``shape`` the logical ``(N, K)`` (GGUF lists it reversed). ``ValueError`` for another type or
    a size that is not whole blocks."""
    fmt = _format(kind)
    blocks = _blocks(fmt, data, shape)
    n, groups = blocks.shape[:2]
    if fmt is Q4_1:
        table = np.ascontiguousarray(blocks[..., :4]).view(np.float16)  # [N, groups, 2]: (d, m)
        qs = blocks[..., 4:]
        nibbles = np.concatenate([qs & 0xF, qs >> 4], axis=-1).reshape(n, groups * BLOCK)
        q = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
        return QuantTensor(fmt, np.ascontiguousarray(q), table, groups * BLOCK)
    table = np.ascontiguousarray(blocks[..., :2]).view(np.float16).reshape(n, groups)
    q = np.ascontiguousarray(blocks[..., 2:]).view(np.int8).reshape(n, groups * BLOCK)
    return QuantTensor(fmt, q, table, groups * BLOCK)


def from_reader_tensor(tensor: Any) -> QuantTensor:
    """:func:`from_blocks` of a ``gguf.ReaderTensor`` (its ``tensor_type``, ``data`` and ``shape``)."""
    shape = [int(d) for d in tensor.shape]
    if len(shape) != 2:
        raise ValueError(f"tensor {getattr(tensor, 'name', '?')!r} has shape {shape}: a quantized "
                         "weight is a matrix")
    return from_blocks(tensor.tensor_type, tensor.data, (shape[1], shape[0]))


def to_blocks(weight: QuantTensor) -> np.ndarray:
    """The GGML blocks of a Q4_1 or Q8_0 weight, ``[N, K / 32 · block bytes]`` uint8 (inverse of
    :func:`from_blocks`)."""
    fmt = _format(weight.format.name)
    n, k = weight.shape
    if weight.format != fmt or k % BLOCK:
        raise ValueError(f"{weight.format.name} [{n}, {k}] is not a GGML {fmt.name} weight")
    head = weight.table.view(np.uint8).reshape(n, k // BLOCK, -1)
    if fmt is Q4_1:
        nibbles = np.stack([weight.q & 0xF, weight.q >> 4], axis=-1).reshape(n, k // BLOCK, BLOCK)
        body = nibbles[..., : BLOCK // 2] | (nibbles[..., BLOCK // 2 :] << 4)
    else:
        body = weight.q.view(np.uint8).reshape(n, k // BLOCK, BLOCK)
    return np.concatenate([head, body], axis=-1).reshape(n, -1)
