"""Operands for running a program on both VMs: deterministic random weights and inputs by buffer.

Floating buffers get normal values (×0.5), I8 levels in [-127, 127], packed I4/U8 random bytes,
BOOL random bits; integer IO_INPUTs (token ids, positions, reshape row ids) are zeros, which
every opcode accepts (an EMBED id 0, a KV position 0).
"""

from __future__ import annotations

from typing import Any

import torch

from amkspec.ir import BufferKind, DType, MegakernelProgram
from amkspec.semantics import storage_shape, torch_dtype


def _value(dtype: DType, shape: tuple[int, ...], gen: torch.Generator, zero_ints: bool) -> torch.Tensor:
    sshape = storage_shape(dtype, shape)
    if dtype.is_float:
        return (torch.randn(sshape, generator=gen) * 0.5).to(torch_dtype(dtype))
    if dtype is DType.BOOL:
        return torch.randint(0, 2, sshape, generator=gen).bool()
    if zero_ints:
        return torch.zeros(sshape, dtype=torch_dtype(dtype))
    if dtype in (DType.I4, DType.U8):
        return torch.randint(0, 256, sshape, generator=gen).to(torch.uint8)
    return torch.randint(-127, 128, sshape, generator=gen).to(torch_dtype(dtype))


def operands(program: MegakernelProgram, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """(weights by source/name, inputs by name) for ``program``."""
    gen = torch.Generator().manual_seed(seed)
    weights: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    for buf in program.buffers:
        if buf.kind in (BufferKind.WEIGHT, BufferKind.CONST):
            weights.setdefault(buf.source or buf.name, _value(buf.dtype, buf.shape, gen, False))
        elif buf.kind is BufferKind.IO_INPUT:
            inputs[buf.name] = _value(buf.dtype, buf.shape, gen, True)
    return weights, inputs
