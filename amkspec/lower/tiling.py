"""Tile widths and split-KV partitions derived from a ScheduleConfig (spec §5.1; the lowering guide)."""

from __future__ import annotations

import math
from collections.abc import Mapping

MAX_TILES = 64
"""At most this many tiles per projection: wider matrices get wider tiles."""

DEFAULT_BASE_WIDTH = 32
"""Tile width when the config names neither ``N_tile`` nor ``base_width``."""

MIN_AUTO_WIDTH = 16
"""The smallest automatic width (an explicit ``N_tile`` may go below it)."""

MAX_PARTITIONS = 8
"""ATTENTION_COMBINE merges at most eight partials (its input cap)."""

MIN_SHARD = 16
"""Split-KV never makes shards shorter than this many positions."""


def tile_width(n: int, tiling: Mapping[str, Mapping[str, int]] | None) -> int:
    """Width of the column tiles of an ``N``-row projection.

    ``tiling["gemv"]["N_tile"]`` clamped to ``[1, N]``; else ``min(max(16, base_width), N)`` with
    ``base_width`` default 32; then widened to ``ceil(N / 64)`` if that would give over 64 tiles.
    """
    gemv = (tiling or {}).get("gemv", {})
    if "N_tile" in gemv:
        width = max(1, min(int(gemv["N_tile"]), n))
    else:
        width = min(max(MIN_AUTO_WIDTH, int(gemv.get("base_width", DEFAULT_BASE_WIDTH))), n)
    if math.ceil(n / width) > MAX_TILES:
        width = math.ceil(n / MAX_TILES)
    return width


def tiles(n: int, width: int) -> list[tuple[int, int]]:
    """``(n_off, N_tile)`` of each tile covering ``N`` columns."""
    return [(off, min(width, n - off)) for off in range(0, n, width)]


def n_partitions(tiling: Mapping[str, Mapping[str, int]] | None, kv_len: int, num_sms: int | None,
                 batch: int) -> int:
    """How many split-KV shards attention gets: 1 unless ``tiling["attention"]["n_partitions"] > 1``.

    Then ``min(8, num_sms, n_partitions, ceil(kv_len / 16))`` (at least 1), and always 1 when B > 1.
    ``num_sms`` None (no target) does not limit it.
    """
    requested = int((tiling or {}).get("attention", {}).get("n_partitions", 1))
    if requested <= 1 or batch > 1:
        return 1
    cap = min(MAX_PARTITIONS, requested, math.ceil(kv_len / MIN_SHARD))
    if num_sms is not None:
        cap = min(cap, num_sms)
    return max(1, cap)


def kv_shards(kv_len: int, parts: int) -> list[tuple[int, int]]:
    """``(kv_start, kv_len)`` of each non-empty shard of ``[0, kv_len)`` split ``parts`` ways."""
    size = math.ceil(kv_len / parts)
    shards: list[tuple[int, int]] = []
    for p in range(parts):
        length = min(size, kv_len - p * size)
        if length <= 0:
            break
        shards.append((p * size, length))
    return shards
