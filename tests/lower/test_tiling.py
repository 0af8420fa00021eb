"""Tile widths and split-KV shards (OPS_FACTS §9.1, §9.4, §16)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import InstructionKind, ScheduleConfig
from amkspec.lower import lower
from amkspec.lower.tiling import kv_shards, n_partitions, tile_width, tiles


@pytest.mark.parametrize(
    ("n", "tiling", "width"),
    [
        (64, {}, 32), (3000, {}, 47), (5000, {}, 79), (16, {}, 16), (8, {}, 8),
        (5000, {"gemv": {"N_tile": 64}}, 79), (3000, {"gemv": {"N_tile": 8}}, 47),
        (64, {"gemv": {"N_tile": 8}}, 8), (32, {"gemv": {"N_tile": 64}}, 32),
        (64, {"gemv": {"base_width": 4}}, 16), (64, {"gemv": {"N_tile": 0}}, 1),
    ],
)
def test_tile_widths(n: int, tiling: dict, width: int) -> None:
    assert tile_width(n, tiling) == width


@given(st.integers(1, 10_000), st.integers(1, 512))
def test_tiles_cover_the_columns_once(n: int, n_tile: int) -> None:
    width = tile_width(n, {"gemv": {"N_tile": n_tile}})
    parts = tiles(n, width)
    assert len(parts) <= 64
    assert [off for off, _ in parts] == list(range(0, n, width))
    assert sum(w for _, w in parts) == n and all(w >= 1 for _, w in parts)


@pytest.mark.parametrize(
    ("pos", "shards"),
    [
        (16, [(0, 9), (9, 8)]),
        (40, [(0, 14), (14, 14), (28, 13)]),
        (200, [(0, 51), (51, 51), (102, 51), (153, 48)]),
        (5, [(0, 6)]),
    ],
)
def test_split_kv_examples(pos: int, shards: list[tuple[int, int]]) -> None:
    tiling = {"attention": {"n_partitions": 4}}
    parts = n_partitions(tiling, pos + 1, 82, 1)
    assert kv_shards(pos + 1, parts) == shards
    prog = lower("toy", "rtx5090", ScheduleConfig(tiling=tiling), pos=pos, compat=True)
    attn = [t for t in prog.tasks if t.op is InstructionKind.ATTENTION_TILE]
    assert [(t.params["kv_start"], t.params["kv_len"]) for t in attn] == shards
    if len(shards) > 1:
        assert [t.sm for t in attn] == list(range(len(shards)))
        assert all(t.params["flags"] == 2 for t in attn)
        assert {b.shape for b in prog.buffers if ".part" in b.name} == {(4, 18)}


@given(st.integers(1, 4096), st.integers(1, 16), st.integers(1, 200))
def test_shards_partition_the_window(kv_len: int, requested: int, num_sms: int) -> None:
    parts = n_partitions({"attention": {"n_partitions": requested}}, kv_len, num_sms, 1)
    assert 1 <= parts <= max(1, min(8, requested, num_sms, math.ceil(kv_len / 16)))
    shards = kv_shards(kv_len, parts)
    assert shards[0][0] == 0 and sum(n for _, n in shards) == kv_len
    assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(shards))


def test_partitions_need_a_request_and_one_sequence() -> None:
    assert n_partitions({}, 1000, 82, 1) == 1
    assert n_partitions({"attention": {"n_partitions": 4}}, 1000, 82, 2) == 1
    assert n_partitions({"attention": {"n_partitions": 4}}, 1000, 2, 1) == 2
    assert n_partitions({"attention": {"n_partitions": 16}}, 1000, None, 1) == 8
