"""The benchmark's HBM floor (vm_cuda.floor, spec §8.7): the bytes a decode step must read."""

from __future__ import annotations

import pytest

from amkspec.ir import BufferKind, DType
from amkspec.lower import lower
from vm_cuda.floor import read_bytes


@pytest.mark.parametrize("pos", [0, 5, 255])
def test_one_embedding_row_all_other_weights_and_the_kv_window(pos: int) -> None:
    program = lower("toy", None, None, pos=pos)  # hidden 64, 1 layer, 2 KV heads of 16, F32
    weights = sum(b.nbytes for b in program.buffers if b.kind is BufferKind.WEIGHT)
    table = next(b for b in program.buffers if b.name == "embed.weight")
    kv_window = 2 * (pos + 1) * 2 * 16 * 4  # K and V, positions 0..pos
    assert read_bytes(program) == weights - table.nbytes + 64 * 4 + kv_window


def test_tiles_count_their_rows_once_and_quantized_weights_their_levels_and_scales() -> None:
    f32 = lower("toy", "h100", {"tiling": {"gemv": {"N_tile": 16}}}, pos=0)
    assert read_bytes(f32) == read_bytes(lower("toy", None, None, pos=0))
    int4 = lower("toy", None, None, pos=0, quant={"bits": 4, "group": 32})
    levels = sum(b.nbytes for b in int4.buffers if b.kind is BufferKind.WEIGHT and b.dtype is DType.I4)
    assert 0 < levels < read_bytes(int4) < read_bytes(f32)
