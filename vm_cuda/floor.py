"""The HBM floor of one launch (spec §8.7, the benchmark): the bytes the step must read.

A step must read, once each: the WEIGHT/CONST bytes its tasks use — for EMBED only the rows of
the ids it looks up (one row per token, not the table), for a GEMV/GEMM tile only its weight rows
``[n_off, n_off + N_tile)`` (of the levels, scales and zero points when quantized; of the bias),
everything else whole — and the KV window its attention tiles read (positions
``[kv_start, kv_start + kv_len)`` of each cache; KV_APPEND writes its row without reading the
cache). Activations are not counted (they stay on chip
or in L2). ``floor_s = read_bytes / bandwidth`` is what ``benchmarks/cuda_vm.py`` divides by.
"""

from __future__ import annotations

import math

import numpy as np

from amkspec.ir import WEIGHT_KINDS, Buffer, BufferKind, InstructionKind, MegakernelProgram, Task
from amkspec.semantics import storage_shape, torch_dtype

_TILES = (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE)


def _rows(buf: Buffer) -> tuple[int, int]:
    """(rows along the first dimension, bytes per row) of ``buf``'s storage."""
    shape = storage_shape(buf.dtype, buf.shape)
    size = torch_dtype(buf.dtype).itemsize
    if not shape:
        return 1, size
    return shape[0], math.prod(shape[1:]) * size


def _read_rows(task: Task, slot: int, buf: Buffer) -> slice | None:
    """The rows of input ``slot`` (``buf``) the task reads, or None for all of them."""
    p = task.params
    if task.op in _TILES and slot >= 1:
        n_off = int(p.get("n_off", 0))
        return slice(n_off, n_off + int(p.get("N_tile", buf.shape[0] - n_off)))
    if task.op is InstructionKind.KV_APPEND and slot == 1:
        return slice(0, 0)  # the cache it appends to is written, not read
    if task.op is InstructionKind.ATTENTION_TILE and slot in (1, 2) and len(buf.shape) == 3:
        start = int(p.get("kv_start", 0))
        return slice(start, start + max(int(p.get("kv_len", buf.shape[0])), 0))
    return None


def read_bytes(program: MegakernelProgram) -> int:
    """The bytes one launch of ``program`` must read (see the module doc)."""
    buffers = program.buffer_by_id()
    seen: dict[int, np.ndarray] = {}
    embedded: dict[int, int] = {}
    for task in program.tasks:
        for slot, bid in enumerate(task.inputs):
            buf = buffers.get(bid)
            if buf is None or buf.kind not in (*WEIGHT_KINDS, BufferKind.KV_CACHE):
                continue
            if task.op is InstructionKind.EMBED and slot == 1:
                ids = buffers.get(task.inputs[0])
                embedded[bid] = max(embedded.get(bid, 0), ids.numel if ids is not None else 1)
                continue
            rows = seen.setdefault(bid, np.zeros(_rows(buf)[0], dtype=bool))
            part = _read_rows(task, slot, buf)
            rows[part if part is not None else slice(None)] = True
    total = sum(int(rows.sum()) * _rows(buffers[bid])[1] for bid, rows in seen.items())
    return total + sum(n * _rows(buffers[bid])[1] for bid, n in embedded.items() if bid not in seen)
