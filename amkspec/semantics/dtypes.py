"""Torch storage types of the IR dtypes (spec §1.2).

``I4`` is stored packed, two levels per byte, in a ``uint8`` tensor whose last
dimension is ``ceil(K / 2)`` for a logical ``[..., K]`` buffer (spec §1.2, §7.7).
F8 types map to torch's float8 types; the original fell back to bfloat16 where
torch lacked them.
"""

from __future__ import annotations

import torch

from amkspec.ir import Buffer, DType

_TORCH_DTYPES: dict[DType, torch.dtype] = {
    DType.F32: torch.float32,
    DType.F16: torch.float16,
    DType.BF16: torch.bfloat16,
    DType.F8E4M3: getattr(torch, "float8_e4m3fn", torch.bfloat16),
    DType.F8E5M2: getattr(torch, "float8_e5m2", torch.bfloat16),
    DType.I32: torch.int32,
    DType.I8: torch.int8,
    DType.I4: torch.uint8,
    DType.U8: torch.uint8,
    DType.BOOL: torch.bool,
}


def torch_dtype(dtype: DType) -> torch.dtype:
    """The torch dtype a buffer of ``dtype`` is stored in (I4: packed ``uint8``)."""
    return _TORCH_DTYPES[dtype]


def storage_shape(dtype: DType, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of the tensor holding a buffer: packed I4 halves the last dim, rounding up."""
    if dtype is DType.I4 and shape:
        return (*shape[:-1], (shape[-1] + 1) // 2)
    return tuple(shape)


def empty_storage(buffer: Buffer) -> torch.Tensor:
    """A zero-filled tensor for ``buffer`` (spec §2.4: activations start as zeros in the VM)."""
    return torch.zeros(storage_shape(buffer.dtype, buffer.shape), dtype=torch_dtype(buffer.dtype))
