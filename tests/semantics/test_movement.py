"""NOP, COPY, EMBED, KV_APPEND against direct indexing (spec §7)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from amkspec.ir import InstructionKind as K
from amkspec.semantics import OpError
from tests.semantics.helpers import DTYPES, rand, run

pytestmark = pytest.mark.numerics


def test_nop_touches_nothing() -> None:
    out = torch.ones(3)
    run(K.NOP, [], out)
    assert torch.equal(out, torch.ones(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_casts_and_broadcasts(dtype: torch.dtype) -> None:
    src = rand(1, 4, seed=1)
    out = run(K.COPY, [src], torch.zeros(3, 4, dtype=dtype))
    for row in out:
        assert torch.equal(row, src[0].to(dtype))


def test_copy_never_reshapes() -> None:
    with pytest.raises(OpError, match="broadcast"):
        run(K.COPY, [torch.zeros(2, 3)], torch.zeros(3, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_embed_gathers_rows(dtype: torch.dtype) -> None:
    table = rand(10, 4, seed=2, dtype=dtype)
    ids = torch.tensor([3, 0, 9], dtype=torch.int32)
    out = run(K.EMBED, [ids, table], torch.zeros(3, 4, dtype=dtype), hidden=4)
    expected = table.float().numpy()[[3, 0, 9]]
    np.testing.assert_array_equal(out.float().numpy(), expected)


def test_embed_is_the_reshape_bridge() -> None:
    flat = torch.arange(8.0).reshape(1, 8)
    out = run(K.EMBED, [torch.tensor([0]), flat], torch.zeros(2, 4), hidden=4)
    assert out.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize("bad", [-1, 10])
def test_embed_rejects_ids_out_of_range(bad: int) -> None:
    with pytest.raises(OpError, match="out of range"):
        run(K.EMBED, [torch.tensor([bad]), torch.zeros(10, 4)], torch.zeros(1, 4), hidden=4)


def test_kv_append_writes_one_row_only() -> None:
    cache = torch.full((5, 2, 3), -1.0)
    new = torch.arange(6.0).reshape(1, 2, 3)
    run(K.KV_APPEND, [new, cache], cache, pos=2)
    assert torch.equal(cache[2], new[0])
    keep = [0, 1, 3, 4]
    assert torch.equal(cache[keep], torch.full((4, 2, 3), -1.0))


def test_kv_append_accepts_a_flat_row_and_casts() -> None:
    cache = torch.zeros(4, 2, 2, dtype=torch.float16)
    run(K.KV_APPEND, [torch.tensor([[0.1, 0.2, 0.3, 0.4]]), cache], cache, pos=3)
    assert torch.equal(cache[3].flatten(), torch.tensor([0.1, 0.2, 0.3, 0.4]).half())


def test_kv_append_batched_writes_each_sequence() -> None:
    cache = torch.zeros(2, 4, 1, 2)
    new = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    run(K.KV_APPEND, [new, cache], cache, pos=1)
    assert cache[0, 1].tolist() == [[1, 2]] and cache[1, 1].tolist() == [[3, 4]]
    assert float(cache.abs().sum()) == 10.0


def test_kv_append_needs_pos_and_a_row_inside_the_cache() -> None:
    cache = torch.zeros(2, 1, 2)
    with pytest.raises(OpError, match="pos"):
        run(K.KV_APPEND, [torch.zeros(1, 1, 2), cache], cache)
    with pytest.raises(OpError, match="outside"):
        run(K.KV_APPEND, [torch.zeros(1, 1, 2), cache], cache, pos=2)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_outputs_round_through_copy_and_add(name: str) -> None:
    f8 = getattr(torch, name)
    src = torch.tensor([[0.3, -1.7, 2.5]])
    copied = run(K.COPY, [src], torch.zeros(1, 3, dtype=f8))
    assert torch.equal(copied.float(), src.to(f8).float())
    added = run(K.ADD, [copied, copied], torch.zeros(1, 3))
    assert torch.equal(added, 2 * copied.float())
