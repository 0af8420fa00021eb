"""Prepared opcode steps (amkspec.semantics.fast, issue 13): bit-identical to the reference
functions, following the operands' values launch after launch, and None where not plain."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import InstructionKind
from amkspec.semantics import OP_SEMANTICS, OpError
from amkspec.semantics.fast import prepare

pytestmark = pytest.mark.numerics

K = InstructionKind
dims = st.integers(1, 5)


def _rand(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen)


@st.composite
def cases(draw: Any) -> tuple[K, list[torch.Tensor], list[torch.Tensor], dict[str, Any]]:
    """An opcode with float32 inputs in the shapes the lowering uses (and some it does not), and an
    output of float32 or a half type (the reference functions compute in float32, then cast)."""
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    half = draw(st.sampled_from([torch.float32, torch.float16, torch.bfloat16]))

    def out(*shape: int) -> torch.Tensor:
        return torch.zeros(*shape, dtype=half)

    op = draw(st.sampled_from([K.GEMV_TILE, K.GEMM_TILE, K.RMSNORM, K.ADD, K.SILU_MUL, K.EMBED, K.ROPE,
                               K.ATTENTION_TILE]))
    r, c = draw(dims), draw(dims)
    if op in (K.GEMV_TILE, K.GEMM_TILE):
        n = draw(st.integers(1, 8))
        n_off = draw(st.integers(-1, n))
        n_tile = draw(st.integers(0, n + 1))
        params = {"n_off": n_off, "N_tile": n_tile}
        if draw(st.booleans()):
            return op, [_rand(gen, r, c), *_quantized(draw, gen, params, n, c)], [out(r, n)], params
        return op, [_rand(gen, r, c), _rand(gen, n, c)], [out(r, n)], params
    if op is K.RMSNORM:
        eps = draw(st.sampled_from([{}, {"eps": 1e-5}]))
        return op, [_rand(gen, r, c), _rand(gen, draw(st.sampled_from([c, 1])))], [out(r, c)], eps
    if op in (K.ADD, K.SILU_MUL):
        other = draw(st.sampled_from([(r, c), (c,), (1, c)]))
        return op, [_rand(gen, r, c), _rand(gen, *other)], [out(r, c)], {}
    if op is K.EMBED:
        rows = draw(st.integers(1, 6))
        ids = torch.tensor(draw(st.lists(st.integers(-1, rows), min_size=1, max_size=3)), dtype=torch.int32)
        shape = draw(st.sampled_from([(len(ids), c), (1, len(ids) * c)]))
        return op, [ids, _rand(gen, rows, c)], [out(*shape)], {"hidden": c}
    if op is K.ROPE:
        hd = 2 * draw(st.integers(1, 3))
        slabs = draw(st.integers(1, 3))
        x = _rand(gen, r, hd) if draw(st.booleans()) else _rand(gen, slabs, r, hd)
        n_pos = 1 if x.dim() == 2 else slabs
        positions = draw(st.lists(st.integers(0, 300), min_size=n_pos, max_size=n_pos))
        pos = torch.tensor(positions, dtype=torch.int32)
        return op, [x, pos], [out(*x.shape)], {"head_dim": hd, "theta": 10000.0}
    n_kv = draw(st.integers(1, 2))
    n_heads = n_kv * draw(st.integers(1, 3))
    hd, seq = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    start = draw(st.integers(0, seq - 1))
    params = {"head_dim": hd, "n_heads": n_heads, "n_kv_heads": n_kv, "kv_start": start,
              "kv_len": draw(st.integers(0, seq - start))}
    caches = [_rand(gen, seq, n_kv, hd), _rand(gen, seq, n_kv, hd)]
    return op, [_rand(gen, n_heads, hd), *caches], [out(1, n_heads * hd)], params


def _quantized(draw: Any, gen: torch.Generator, params: dict[str, Any], n: int, k: int) -> list[torch.Tensor]:
    """Levels and a table of a quantized ``[n, k]`` weight (I4 packed or I8; symmetric or affine),
    and their params in ``params``; sometimes a table of the wrong form (the reference raises)."""
    int4, affine = draw(st.booleans()), draw(st.booleans())
    group = draw(st.integers(1, k))
    groups = -(-k // group) + draw(st.integers(0, 1))
    if int4:
        q = torch.randint(0, 256, (n, (k + 1) // 2), generator=gen, dtype=torch.int64).to(torch.uint8)
    else:
        q = torch.randint(-128, 128, (n, k), generator=gen, dtype=torch.int64).to(torch.int8)
    pairs = affine or draw(st.booleans())  # a table of pairs without the flag: the reference raises
    table = torch.randn(n, groups, *((2,) if pairs else ()), generator=gen)
    params.update(qdtype=7 if int4 else 6, group=group, flags=4 if affine else 0)
    return [q, table.to(torch.float16)]


def _reference(op: K, ins: list[torch.Tensor], outs: list[torch.Tensor], params: dict[str, Any]) -> Any:
    """The reference function's outputs (on copies), or the error it raises."""
    mine = [o.clone() for o in outs]
    try:
        OP_SEMANTICS[op]([i.clone() for i in ins], mine, params)
    except OpError as exc:
        return str(exc)
    return mine


def _step(step: Any, outs: list[torch.Tensor]) -> Any:
    try:
        step()
    except OpError as exc:
        return str(exc)
    return [o.clone() for o in outs]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@given(cases(), st.integers(0, 2**16))
def test_a_prepared_step_is_bit_identical_and_follows_its_operands(case: Any, seed: int) -> None:
    op, ins, outs, params = case
    step = prepare(op, ins, outs, params)
    if step is None:
        return
    for launch in range(2):
        if launch:  # new values in the same tensors, as the launch frame gives them
            gen = torch.Generator().manual_seed(seed)
            for t in ins:
                if t.dtype.is_floating_point:
                    t.copy_(torch.randn(t.shape, generator=gen))
            for o in outs:
                o.zero_()
        expected = _reference(op, ins, outs, params)
        assert _same(_step(step, outs), expected)


def test_the_lowered_shapes_are_prepared() -> None:
    """The plain case of each opcode gets a step (the reason the prepared forms exist)."""
    x, w, out = torch.ones(1, 4), torch.ones(8, 4), torch.zeros(1, 8)
    assert prepare(K.GEMV_TILE, [x, w], [out], {"n_off": 4, "N_tile": 4}) is not None
    assert prepare(K.RMSNORM, [x, torch.ones(4)], [torch.zeros(1, 4)], {"hidden": 4}) is not None
    assert prepare(K.ADD, [x, x], [torch.zeros(1, 4)], {}) is not None
    q4, pairs = torch.zeros(8, 2, dtype=torch.uint8), torch.ones(8, 1, 2, dtype=torch.float16)
    q4_1 = {"K": 4, "n_off": 4, "N_tile": 4, "qdtype": 7, "group": 4, "flags": 4}
    assert prepare(K.GEMV_TILE, [x, q4, pairs], [out], q4_1) is not None
    q, cache = torch.ones(4, 2), torch.ones(5, 2, 2)
    params = {"head_dim": 2, "n_heads": 4, "n_kv_heads": 2, "kv_len": 3}
    assert prepare(K.ATTENTION_TILE, [q, cache, cache], [torch.zeros(1, 8)], params) is not None


@pytest.mark.parametrize(("op", "ins", "params"), [
    (K.GEMV_TILE, [torch.ones(1, 4), torch.ones(8, 4), torch.ones(8)], {}),  # a bias
    (K.GEMV_TILE, [torch.ones(1, 4), torch.ones(8, 4, dtype=torch.float16)], {}),
    (K.GEMV_TILE, [torch.ones(1, 4), torch.ones(8, 4)], {"qdtype": 6}),
    (K.ROPE, [torch.ones(2, 4), torch.zeros(1, dtype=torch.int32)], {}),  # no head_dim: the reference raises
    (K.ATTENTION_TILE, [torch.ones(4, 2), torch.ones(5, 2, 2), torch.ones(5, 2, 2)],
     {"head_dim": 2, "flags": 2}),  # PARTIAL_WRITE
    (K.KV_APPEND, [torch.ones(1, 2, 2)], {"pos": 0}),  # no prepared form
])
def test_what_is_not_plain_is_left_to_the_reference_function(
    op: K, ins: list[torch.Tensor], params: Any,
) -> None:
    assert prepare(op, ins, [torch.zeros(1, 8)], params) is None


@pytest.mark.parametrize("out_at", [36, 30, 2])  # after W; over W's last row; over x
@pytest.mark.parametrize("n_off", [0, 4])
def test_a_tile_whose_output_shares_a_storage_with_its_inputs(out_at: int, n_off: int) -> None:
    """Buffers laid out on shared pages: one storage holds x, W and out. Where out is apart from
    both, the step writes the product straight into out; where it overlaps one, it must still run
    and give exactly what the reference function gives."""
    def operands() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        arena = torch.randn(48, generator=torch.Generator().manual_seed(out_at + n_off))
        return [arena[0:4].view(1, 4), arena[4:36].view(8, 4)], [arena[out_at : out_at + 8].view(1, 8)]

    params = {"n_off": n_off, "N_tile": 4}
    ins, outs = operands()
    step = prepare(K.GEMV_TILE, ins, outs, params)
    assert step is not None
    step()
    ref_ins, ref_outs = operands()
    OP_SEMANTICS[K.GEMV_TILE](ref_ins, ref_outs, params)
    assert torch.equal(outs[0], ref_outs[0]) and torch.equal(ins[1], ref_ins[1])


@pytest.mark.parametrize("op", [K.ADD, K.SILU_MUL, K.RMSNORM, K.EMBED, K.ROPE])
@pytest.mark.parametrize("out_at", [16, 12, 10, 6, 0])  # apart; over the second (twice); both; the first
def test_an_output_on_a_page_with_its_inputs(op: K, out_at: int) -> None:
    """Pages can put an output in the storage of its inputs. Where it is apart from them the step
    writes its result straight into it; where it overlaps one, it must still give exactly what the
    reference function gives (or fail as it does)."""
    params: dict[str, Any] = {"head_dim": 4} if op is K.ROPE else {"hidden": 4}

    def operands() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        arena = torch.randn(24, generator=torch.Generator().manual_seed(out_at))
        first, second = arena[0:8].view(2, 4), arena[8:16].view(2, 4)
        out = arena[out_at : out_at + 8].view(2, 4)
        if op is K.EMBED:
            return [torch.tensor([1], dtype=torch.int32), second], [out[:1]]
        if op is K.ROPE:
            return [first, torch.tensor([3], dtype=torch.int32)], [out]
        return [first, second[0] if op is K.RMSNORM else second], [out]

    ins, outs = operands()
    step = prepare(op, ins, outs, params)
    assert step is not None
    got = _step(step, outs)
    ref_ins, ref_outs = operands()
    try:
        OP_SEMANTICS[op](ref_ins, ref_outs, params)
        expected: Any = ref_outs
    except OpError as exc:
        expected = str(exc)
    assert _same(got, expected) and _same(ins, ref_ins)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_tile_into_a_half_output_casts_as_the_reference_does(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(7)
    ins, outs = [_rand(gen, 1, 4), _rand(gen, 8, 4)], [torch.zeros(1, 8, dtype=dtype)]
    params = {"n_off": 4, "N_tile": 4}
    step = prepare(K.GEMV_TILE, ins, outs, params)
    assert step is not None
    assert _same(_step(step, outs), _reference(K.GEMV_TILE, ins, outs, params))


def test_a_quantized_tile_dequantizes_again_only_when_its_weights_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from amkspec.semantics import quant

    calls: list[int] = []
    real = quant.dequantize
    monkeypatch.setattr(quant, "dequantize", lambda *a, **k: calls.append(1) or real(*a, **k))
    gen = torch.Generator().manual_seed(3)
    x, out = torch.randn(1, 8, generator=gen), torch.zeros(1, 4)
    q = torch.randint(0, 256, (4, 4), generator=gen, dtype=torch.int64).to(torch.uint8)
    table = torch.randn(4, 2, 2, generator=gen).to(torch.float16)
    params = {"K": 8, "N_tile": 4, "qdtype": 7, "group": 4, "flags": 4}
    step = prepare(K.GEMV_TILE, [x, q, table], [out], params)
    assert step is not None
    by_step = []
    for launch in range(4):
        if launch == 2:
            q[1, 0] ^= 0x11  # new levels in the same tensor
        if launch == 3:
            x.copy_(torch.randn(1, 8, generator=gen))
        before = len(calls)
        step()
        by_step.append(len(calls) - before)
        expected = _reference(K.GEMV_TILE, [x, q, table], [torch.zeros(1, 4)], params)
        assert torch.equal(out, expected[0])
    assert by_step == [1, 0, 1, 0]  # the first launch, and the one after the levels changed
