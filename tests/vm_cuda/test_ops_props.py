"""Property tests: hypothesis draws shapes, params, dtypes and block sizes for every opcode family
and the megakernel's CPU build must match the ReferenceVM (spec §7, §8).

Each strategy builds a program the validator accepts (checked: a rejected draw is a test
failure, not a skip), runs it on ``MegakernelVM(prog, backend="cpu")`` with 1..8 threads per
block and compares with ``ReferenceVM`` as ``tests/vm_cuda/test_ops.py`` does.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder
from amkspec.proofs import validate
from amkspec.semantics import quantize
from amkspec.vm import ReferenceVM
from tests.vm_cuda.test_ops import FLOATS, Operand, build, check, clone, compare, data, gen, inp, out
from vm_cuda import MegakernelVM

pytestmark = pytest.mark.numerics

K = InstructionKind
BK = BufferKind
Draw = st.DrawFn

floats = st.sampled_from(FLOATS)
threads = st.integers(1, 8)
seeds = st.integers(0, 2**31 - 1)


def dims(draw: Draw, rank: int, hi: int = 9) -> tuple[int, ...]:
    return tuple(draw(st.integers(1, hi)) for _ in range(rank))


def valid(op: InstructionKind, ins: list[Operand], outs: list[Operand], params: dict[str, Any]) -> None:
    prog = build(op, ins, outs, params)[0]
    report = validate(prog)
    assert report.ok, report


@given(st.data())
def test_elementwise(d: st.DataObject) -> None:
    op = d.draw(st.sampled_from([K.ADD, K.MUL, K.SILU_MUL, K.GELU, K.SOFTMAX, K.ALLREDUCE_SHARD]))
    shape = dims(d.draw, d.draw(st.integers(1, 3)))
    g = gen(d.draw(seeds))
    n_in = {K.GELU: 1, K.SOFTMAX: 1, K.ALLREDUCE_SHARD: d.draw(st.integers(1, 8))}.get(op, 2)
    if op is K.MUL:
        n_in = d.draw(st.integers(1, 2))
    ins = [inp(f"a{i}", d.draw(floats), shape, g) for i in range(n_in)]
    params: dict[str, Any] = {}
    if op is K.SOFTMAX:
        params["dim"] = d.draw(st.integers(-len(shape), len(shape) - 1))
    if op is K.MUL and n_in == 1:
        params["scale"] = d.draw(st.floats(-4, 4, width=32))
    outs = [out("y", d.draw(floats), shape)]
    valid(op, ins, outs, params)
    check(op, ins, outs, params, d.draw(threads))


@given(st.data())
def test_norms(d: st.DataObject) -> None:
    op = d.draw(st.sampled_from([K.RMSNORM, K.LAYERNORM]))
    rows, hidden = d.draw(st.integers(1, 6)), d.draw(st.integers(1, 70))
    g = gen(d.draw(seeds))
    ins = [inp("x", d.draw(floats), (rows, hidden), g), inp("w", d.draw(floats), (hidden,), g, BK.WEIGHT)]
    if op is K.LAYERNORM and d.draw(st.booleans()):
        ins.append(inp("b", d.draw(floats), (hidden,), g, BK.WEIGHT))
    params = {"hidden": hidden, "eps": d.draw(st.sampled_from([1e-6, 1e-5, 1e-3, 0.1]))}
    outs = [out("y", d.draw(floats), (rows, hidden))]
    valid(op, ins, outs, params)
    check(op, ins, outs, params, d.draw(threads))


def tiling(d: st.DataObject, n: int) -> list[tuple[int, int]]:
    cuts = sorted(d.draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
    bounds = [0, *cuts, n]
    return [(a, b - a) for a, b in itertools.pairwise(bounds)]


def run_tiles(
    op: InstructionKind,
    ins: list[Operand],
    result: Operand,
    params: dict[str, Any],
    tiles: list[tuple[int, int]],
    n_threads: int,
) -> None:
    b = ProgramBuilder()
    ids = {o.name: b.new_buffer(o.name, o.kind, o.dtype, o.shape) for o in (*ins, result)}
    done = b.new_counter("tiles")
    for n_off, n_tile in tiles:
        b.add_task(
            op,
            [ids[o.name] for o in ins],
            [ids[result.name]],
            out_counter=done,
            params={**params, "n_off": n_off, "N_tile": n_tile},
        )
    prog = b.build()
    report = validate(prog)
    assert report.ok, report
    weights = {o.name: o.value for o in ins if o.kind is BK.WEIGHT and o.value is not None}
    inputs = {o.name: o.value for o in ins if o.kind is BK.IO_INPUT and o.value is not None}
    ref = ReferenceVM(prog).run(clone(weights), clone(inputs))
    got = MegakernelVM(prog, backend="cpu", threads_per_block=n_threads).run(weights, inputs)
    compare(got, ref, exact=False)


@given(st.data())
def test_linear_tiles(d: st.DataObject) -> None:
    op = d.draw(st.sampled_from([K.GEMV_TILE, K.GEMM_TILE]))
    m = 1 if op is K.GEMV_TILE else d.draw(st.integers(1, 4))
    k, n = d.draw(st.integers(1, 40)), d.draw(st.integers(1, 24))
    g = gen(d.draw(seeds))
    ins = [inp("x", d.draw(floats), (m, k), g), inp("w", d.draw(floats), (n, k), g, BK.WEIGHT)]
    if d.draw(st.booleans()):
        ins.append(inp("b", d.draw(floats), (n,), g, BK.WEIGHT))
    params: dict[str, Any] = {"K": k}
    if op is K.GEMM_TILE:
        params |= {"M_tile": m, "m_off": 0}
    run_tiles(op, ins, out("y", d.draw(floats), (m, n)), params, tiling(d, n), d.draw(threads))


@given(st.data())
def test_quantized_gemv(d: st.DataObject) -> None:
    bits = d.draw(st.sampled_from([4, 8]))
    k, n = d.draw(st.integers(1, 48)), d.draw(st.integers(1, 16))
    group = d.draw(st.integers(1, k))
    g = gen(d.draw(seeds))
    qw = quantize(data(DType.F32, (n, k), g), bits, group)
    ins = [
        inp("x", d.draw(floats), (d.draw(st.integers(1, 3)), k), g),
        Operand("qw", DType.I4 if bits == 4 else DType.I8, (n, k), BK.WEIGHT, qw.q),
        Operand("sc", DType.F16, tuple(qw.scales.shape), BK.WEIGHT, qw.scales),
    ]
    params = {"K": k, "qdtype": int(DType.I4 if bits == 4 else DType.I8), "group": group}
    m = ins[0].shape[0]
    run_tiles(K.GEMV_TILE, ins, out("y", d.draw(floats), (m, n)), params, tiling(d, n), d.draw(threads))


@given(st.data())
def test_attention(d: st.DataObject) -> None:
    n_kv, rep = d.draw(st.integers(1, 3)), d.draw(st.integers(1, 3))
    hd, seq = 2 * d.draw(st.integers(1, 8)), d.draw(st.integers(1, 12))
    batch = d.draw(st.one_of(st.none(), st.integers(1, 3)))
    start = d.draw(st.integers(0, seq - 1))
    length = d.draw(st.integers(1, seq - start))
    n_heads = n_kv * rep
    g = gen(d.draw(seeds))
    dt = d.draw(floats)
    lead = () if batch is None else (batch,)
    ins = [
        inp("q", d.draw(floats), (*lead, n_heads, hd), g),
        inp("k", dt, (*lead, seq, n_kv, hd), g, BK.KV_CACHE),
        inp("v", dt, (*lead, seq, n_kv, hd), g, BK.KV_CACHE),
    ]
    params = {
        "head_dim": hd,
        "n_heads": n_heads,
        "n_kv_heads": n_kv,
        "kv_start": start,
        "kv_len": length,
        "scale": d.draw(st.sampled_from([hd**-0.5, 0.1, 1.0])),
    }
    partial = batch is None and d.draw(st.booleans())
    if partial:
        params["flags"] = 2
    shape = (n_heads, hd + 2) if partial else ((batch or 1), n_heads * hd)
    outs = [out("o", DType.F32 if partial else d.draw(floats), shape)]
    valid(K.ATTENTION_TILE, ins, outs, params)
    check(K.ATTENTION_TILE, ins, outs, params, d.draw(threads))


@given(st.data())
def test_rope(d: st.DataObject) -> None:
    hd, heads = 2 * d.draw(st.integers(1, 8)), d.draw(st.integers(1, 4))
    slabs = d.draw(st.one_of(st.none(), st.integers(1, 3)))
    shape = (heads, hd) if slabs is None else (slabs, heads, hd)
    g = gen(d.draw(seeds))
    pos = inp("pos", DType.I32, (slabs or 1,), g, lo=0, hi=4096)
    ins = [inp("x", d.draw(floats), shape, g), pos]
    params = {"head_dim": hd, "theta": d.draw(st.sampled_from([10000.0, 500000.0, 100.0]))}
    outs = [out("y", d.draw(floats), shape)]
    valid(K.ROPE, ins, outs, params)
    check(K.ROPE, ins, outs, params, d.draw(threads))


@given(st.data())
def test_movement(d: st.DataObject) -> None:
    op = d.draw(st.sampled_from([K.COPY, K.EMBED, K.KV_APPEND, K.SAMPLE_ARGMAX]))
    g = gen(d.draw(seeds))
    n_threads = d.draw(threads)
    anydt = st.sampled_from([*FLOATS, DType.I32, DType.I8])
    if op is K.COPY:
        shape = dims(d.draw, d.draw(st.integers(1, 3)))
        ins, outs, params = [inp("src", d.draw(anydt), shape, g)], [out("dst", d.draw(anydt), shape)], {}
    elif op is K.EMBED:
        rows, width, count = d.draw(st.integers(1, 9)), d.draw(st.integers(1, 9)), d.draw(st.integers(1, 4))
        ids = inp("ids", DType.I32, (count,), g, lo=0, hi=rows)
        ins = [ids, inp("table", d.draw(anydt), (rows, width), g, BK.WEIGHT)]
        outs, params = [out("out", d.draw(floats), (count, width))], {"hidden": width}
    elif op is K.KV_APPEND:
        seq, n_kv, hd = d.draw(st.integers(1, 8)), d.draw(st.integers(1, 3)), d.draw(st.integers(1, 6))
        batch = d.draw(st.one_of(st.none(), st.integers(1, 3)))
        lead = () if batch is None else (batch,)
        cache = inp("cache", d.draw(floats), (*lead, seq, n_kv, hd), g, BK.KV_CACHE)
        new = inp(
            "new",
            d.draw(floats),
            (batch or 1, n_kv * hd) if d.draw(st.booleans()) else (batch or 1, n_kv, hd),
            g,
        )
        ins, outs, params = [new, cache], [cache], {"pos": d.draw(st.integers(0, seq - 1))}
    else:
        rows, vocab = d.draw(st.integers(1, 4)), d.draw(st.integers(1, 300))
        ins = [inp("logits", d.draw(floats), (rows, vocab), g)]
        outs, params = [out("tok", DType.I32, (rows,))], {}
    valid(op, ins, outs, params)
    check(op, ins, outs, params, n_threads)


@given(st.data())
def test_dequant(d: st.DataObject) -> None:
    bits = d.draw(st.sampled_from([4, 8]))
    rows, groups, group = d.draw(st.integers(1, 6)), d.draw(st.integers(1, 4)), d.draw(st.integers(1, 12))
    k = groups * group
    g = gen(d.draw(seeds))
    qw = quantize(data(DType.F32, (rows, k), g), bits, group)
    ins = [
        Operand("q", DType.I4 if bits == 4 else DType.I8, (rows, k), value=qw.q),
        Operand("s", DType.F16, (rows, groups), value=qw.scales),
    ]
    params = {"qdtype": int(DType.I4 if bits == 4 else DType.I8), "group": group}
    outs = [out("y", d.draw(floats), (rows, k))]
    valid(K.DEQUANT, ins, outs, params)
    check(K.DEQUANT, ins, outs, params, d.draw(threads))
