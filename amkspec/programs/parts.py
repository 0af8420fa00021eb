"""Small parts of programs: buffer specs by kind and one-task programs (the conformance generators'
and the memory-rule tests' building blocks)."""

from __future__ import annotations

from typing import Any

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder

BufSpec = tuple[str, BufferKind, DType, tuple[int, ...]]
"""The arguments of :meth:`amkspec.ir.ProgramBuilder.new_buffer`: name, kind, dtype, shape."""

GEMV_8 = {"K": 8, "N_tile": 8, "n_off": 0}
"""The params of one 8 × 8 GEMV tile (``K``, ``N_tile``, ``n_off`` in this order: the JSON bytes)."""


def io(name: str, shape: tuple[int, ...], dtype: DType = DType.F32) -> BufSpec:
    """An IO_INPUT."""
    return (name, BufferKind.IO_INPUT, dtype, shape)


def wt(name: str, shape: tuple[int, ...], dtype: DType = DType.F32) -> BufSpec:
    """A WEIGHT."""
    return (name, BufferKind.WEIGHT, dtype, shape)


def kv(name: str, shape: tuple[int, ...]) -> BufSpec:
    """An F32 KV_CACHE."""
    return (name, BufferKind.KV_CACHE, DType.F32, shape)


def res(name: str, shape: tuple[int, ...], dtype: DType = DType.F32) -> BufSpec:
    """An IO_OUTPUT (a result)."""
    return (name, BufferKind.IO_OUTPUT, dtype, shape)


def one_task(op: InstructionKind, inputs: list[BufSpec], output: BufSpec | int, params: dict[str, Any], *,
             label: str | None = None, meta: dict[str, Any] | None = None) -> MegakernelProgram:
    """A program of one ``op`` task; ``output`` given as an int reuses that input buffer (KV_APPEND).
    ``label`` defaults to the opcode's name in lower case."""
    b = ProgramBuilder()
    ins = [b.new_buffer(*spec) for spec in inputs]
    out = ins[output] if isinstance(output, int) else b.new_buffer(*output)
    b.add_task(op, ins, [out], params=params, label=op.name.lower() if label is None else label)
    return b.build(meta=meta)
