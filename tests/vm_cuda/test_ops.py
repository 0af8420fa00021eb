"""Every opcode × dtype on the megakernel's CPU build against the ReferenceVM (spec §7, §8).

Each test builds a one-task (or few-task) program with ``amkspec.ir``, runs it on
``MegakernelVM(prog, backend="cpu")`` (the device code of ``vm_cuda/ops``) and on
``ReferenceVM`` (``amkspec.semantics``), and compares every returned tensor: exactly for the
direct conversions (COPY, EMBED, KV_APPEND, SAMPLE_ARGMAX, integer outputs), within the
per-dtype tolerance otherwise. Block sizes 1, 3, 4 and 8 exercise both the thread-per-item
and the block-reduction paths (and reductions over a non-power-of-two block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pytest
import torch

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.semantics import quantize, storage_shape, torch_dtype
from amkspec.vm import ReferenceVM
from vm_cuda import KernelFault, MegakernelVM
from vm_cuda.compare import tolerance

pytestmark = pytest.mark.numerics

K = InstructionKind
BK = BufferKind
FLOATS = (DType.F32, DType.F16, DType.BF16)
EXACT_OPS = frozenset({K.COPY, K.EMBED, K.KV_APPEND, K.SAMPLE_ARGMAX, K.NOP})


@attrs.frozen
class Operand:
    """One buffer of a test program and the tensor bound to it (``None``: zeros / written)."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    kind: BufferKind = BK.IO_INPUT
    value: torch.Tensor | None = None


def data(
    dtype: DType, shape: Sequence[int], gen: torch.Generator, lo: int = -100, hi: int = 100
) -> torch.Tensor:
    """Random storage for a buffer: normal floats, integers in [lo, hi), packed I4 bytes."""
    sshape = storage_shape(dtype, tuple(shape))
    if dtype in (DType.I4, DType.U8):
        return torch.randint(0, 256, sshape, generator=gen, dtype=torch.int64).to(torch.uint8)
    if dtype is DType.BOOL:
        return torch.randint(0, 2, sshape, generator=gen).bool()
    if dtype.is_integer:
        return torch.randint(lo, hi, sshape, generator=gen, dtype=torch.int64).to(torch_dtype(dtype))
    return torch.randn(sshape, generator=gen).to(torch_dtype(dtype))


def build(
    op: InstructionKind, ins: Sequence[Operand], outs: Sequence[Operand], params: Mapping[str, Any]
) -> tuple[MegakernelProgram, dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A one-task program and its weights / inputs / kv dicts (an operand named twice is one buffer)."""
    b = ProgramBuilder()
    ids: dict[str, int] = {}
    weights: dict[str, torch.Tensor] = {}
    inputs: dict[str, torch.Tensor] = {}
    kv: dict[str, torch.Tensor] = {}
    for o in (*ins, *outs):
        if o.name in ids:
            continue
        ids[o.name] = b.new_buffer(o.name, o.kind, o.dtype, o.shape)
        if o.value is not None:
            {BK.WEIGHT: weights, BK.CONST: weights, BK.KV_CACHE: kv}.get(o.kind, inputs)[o.name] = o.value
    b.add_task(op, [ids[o.name] for o in ins], [ids[o.name] for o in outs], params=dict(params))
    return b.build(), weights, inputs, kv


def clone(d: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in d.items()}


def compare(got: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor], exact: bool) -> None:
    """Same keys, shapes and dtypes; equal values (exact) or within the output dtype's tolerance."""
    assert got.keys() == ref.keys()
    for name, r in ref.items():
        g = got[name]
        assert g.shape == r.shape and g.dtype == r.dtype, name
        atol, rtol = (0.0, 0.0) if exact else tolerance(r.dtype)
        if r.dtype.is_floating_point:
            torch.testing.assert_close(g.float(), r.float(), atol=atol, rtol=rtol, equal_nan=True, msg=name)
        else:
            assert torch.equal(g, r), f"{name}: {g} != {r}"


def check(
    op: InstructionKind,
    ins: Sequence[Operand],
    outs: Sequence[Operand],
    params: Mapping[str, Any],
    threads: int = 4,
    exact: bool | None = None,
    unvalidated: bool = False,
) -> dict[str, torch.Tensor]:
    """Run the task on both VMs and compare; returns the reference outputs.

    ``unvalidated``: the numerics of operand shapes the validator's footprint rules reject
    (broadcasting reads), run on both VMs through their test-only override."""
    prog, weights, inputs, kv = build(op, ins, outs, params)
    ref = ReferenceVM(prog, _unsafe_skip_validation=unvalidated).run(clone(weights), clone(inputs), clone(kv))
    vm = MegakernelVM(prog, backend="cpu", threads_per_block=threads, _unsafe_skip_validation=unvalidated)
    got = vm.run(weights, inputs, clone(kv))
    compare(got, ref, op in EXACT_OPS if exact is None else exact)
    return ref


def tiled(
    op: InstructionKind,
    ins: Sequence[Operand],
    result: Operand,
    params: Mapping[str, Any],
    tiles: Sequence[tuple[int, int]],
    threads: int,
    unvalidated: bool = False,
    variant: str = "release",
) -> None:
    """Column tiles ``(n_off, N_tile)`` of one output, sharing one counter, on both VMs (``variant``:
    the CPU build's)."""
    prog, weights, inputs, kv = build(
        op, ins, [result], {**params, "n_off": tiles[0][0], "N_tile": tiles[0][1]}
    )
    b = ProgramBuilder()
    b.buffers, b.counters, b.tasks = list(prog.buffers), list(prog.counters), list(prog.tasks)
    first = prog.tasks[0]
    for n_off, n_tile in tiles[1:]:
        b.add_task(
            op,
            first.inputs,
            first.outputs,
            out_counter=first.out_counter,
            params={**first.params, "n_off": n_off, "N_tile": n_tile},
        )
    prog = b.build()
    ref = ReferenceVM(prog, _unsafe_skip_validation=unvalidated).run(clone(weights), clone(inputs), clone(kv))
    vm = MegakernelVM(
        prog, backend="cpu", threads_per_block=threads, variant=variant, _unsafe_skip_validation=unvalidated
    )
    compare(vm.run(weights, inputs, clone(kv)), ref, exact=False)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def inp(
    name: str,
    dtype: DType,
    shape: tuple[int, ...],
    g: torch.Generator,
    kind: BufferKind = BK.IO_INPUT,
    **kw: int,
) -> Operand:
    return Operand(name, dtype, shape, kind, data(dtype, shape, g, **kw))


def out(name: str, dtype: DType, shape: tuple[int, ...]) -> Operand:
    return Operand(name, dtype, shape, BK.IO_OUTPUT)


THREADS = (1, 3, 4, 8)

# ---------------------------------------------------------------------------------------- movement


@pytest.mark.parametrize(
    "src_dt", [*FLOATS, DType.F8E4M3, DType.F8E5M2, DType.I32, DType.I8, DType.U8, DType.BOOL]
)
@pytest.mark.parametrize("dst_dt", [*FLOATS, DType.F8E4M3, DType.F8E5M2, DType.I32, DType.I8, DType.BOOL])
def test_copy_converts_directly(src_dt: DType, dst_dt: DType) -> None:
    g = gen(1)
    check(K.COPY, [inp("src", src_dt, (3, 5), g)], [out("dst", dst_dt, (3, 5))], {})


@pytest.mark.parametrize("threads", THREADS)
def test_copy_broadcasts(threads: int) -> None:
    g = gen(2)
    check(
        K.COPY,
        [inp("src", DType.F32, (1, 5), g)],
        [out("dst", DType.BF16, (2, 3, 5))],
        {},
        threads,
        unvalidated=True,
    )


def test_copy_large_values_wrap_like_torch() -> None:
    src = torch.tensor([[3e5, -2.5e4, 200.7, -129.9, 1e9, 65519.0, 65520.0, 1e-8]])
    check(K.COPY, [Operand("src", DType.F32, (1, 8), value=src)], [out("dst", DType.I8, (1, 8))], {})
    check(K.COPY, [Operand("src", DType.F32, (1, 8), value=src)], [out("dst", DType.F16, (1, 8))], {})
    check(K.COPY, [Operand("src", DType.F32, (1, 8), value=src)], [out("dst", DType.F8E4M3, (1, 8))], {})
    check(K.COPY, [Operand("src", DType.F32, (1, 8), value=src)], [out("dst", DType.F8E5M2, (1, 8))], {})


def test_half_bfloat16_float8_rounding_is_bit_exact() -> None:
    """Every float16 / bfloat16 bit pattern, and dense float32 samples, convert like torch."""
    all16 = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16)
    for dt, tdt in ((DType.F16, torch.float16), (DType.BF16, torch.bfloat16)):
        vals = all16.view(tdt).float().reshape(256, 256)
        check(
            K.COPY, [Operand("src", DType.F32, (256, 256), value=vals)], [out("dst", dt, (256, 256))], {}, 8
        )
    g = gen(3)
    wide = torch.randn(64, 64, generator=g) * torch.logspace(-12, 6, 64)[None, :]
    for dt in (DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2):
        check(K.COPY, [Operand("src", DType.F32, (64, 64), value=wide)], [out("dst", dt, (64, 64))], {}, 8)


@pytest.mark.parametrize("table_dt", [*FLOATS, DType.I8])
@pytest.mark.parametrize("out_dt", FLOATS)
def test_embed_gathers_rows(table_dt: DType, out_dt: DType) -> None:
    g = gen(4)
    ids = Operand("ids", DType.I32, (3,), value=torch.tensor([5, 0, 5], dtype=torch.int32))
    table = inp("table", table_dt, (7, 6), g, BK.WEIGHT)
    check(K.EMBED, [ids, table], [out("out", out_dt, (3, 6))], {"hidden": 6})


@pytest.mark.parametrize("threads", THREADS)
def test_embed_reshape_bridge(threads: int) -> None:
    g = gen(5)
    ids = Operand("ids", DType.I32, (1,), value=torch.tensor([0], dtype=torch.int32))
    check(
        K.EMBED,
        [ids, inp("flat", DType.F32, (1, 64), g)],
        [out("heads", DType.F32, (4, 16))],
        {"hidden": 64},
        threads,
    )


def test_embed_out_of_range_id_faults() -> None:
    ids = Operand("ids", DType.I32, (2,), value=torch.tensor([1, 9], dtype=torch.int32))
    table = inp("table", DType.F32, (4, 3), gen(6), BK.WEIGHT)
    prog, weights, inputs, _ = build(K.EMBED, [ids, table], [out("out", DType.F32, (2, 3))], {"hidden": 3})
    with pytest.raises(KernelFault):
        MegakernelVM(prog, backend="cpu").run(weights, inputs)


@pytest.mark.parametrize("cache_dt", FLOATS)
@pytest.mark.parametrize("new_shape", [(1, 2, 4), (1, 8), (3, 2, 4)])
def test_kv_append_rank3(cache_dt: DType, new_shape: tuple[int, ...]) -> None:
    g = gen(7)
    cache = inp("cache", cache_dt, (6, 2, 4), g, BK.KV_CACHE)
    check(K.KV_APPEND, [inp("new", DType.F32, new_shape, g), cache], [cache], {"pos": 2})


@pytest.mark.parametrize("new_shape", [(3, 2, 4), (3, 8)])
def test_kv_append_batched(new_shape: tuple[int, ...]) -> None:
    g = gen(8)
    cache = inp("cache", DType.BF16, (3, 5, 2, 4), g, BK.KV_CACHE)
    check(K.KV_APPEND, [inp("new", DType.F16, new_shape, g), cache], [cache], {"pos": 4})


def test_nop_runs() -> None:
    b = ProgramBuilder()
    b.add_task(K.NOP, [], [])
    prog = b.build()
    assert MegakernelVM(prog, backend="cpu").run({}, {}) == ReferenceVM(prog).run({}, {}) == {}


# ---------------------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("threads", THREADS)
def test_rmsnorm(dt: DType, threads: int) -> None:
    g = gen(9)
    x = inp("x", dt, (3, 40), g)
    check(
        K.RMSNORM,
        [x, inp("w", dt, (40,), g, BK.WEIGHT)],
        [out("y", dt, (3, 40))],
        {"hidden": 40, "eps": 1e-5},
        threads,
    )


def test_rmsnorm_default_eps_and_mixed_dtypes() -> None:
    g = gen(10)
    x = Operand("x", DType.F32, (2, 8), value=torch.randn(2, 8, generator=g) * 1e-3)
    check(
        K.RMSNORM,
        [x, inp("w", DType.BF16, (8,), g, BK.WEIGHT)],
        [out("y", DType.F16, (2, 8))],
        {"hidden": 8, "eps": 1e-6},
    )


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("threads", (1, 3, 8))
def test_layernorm(dt: DType, bias: bool, threads: int) -> None:
    g = gen(11)
    ins = [inp("x", dt, (5, 24), g), inp("w", dt, (24,), g, BK.WEIGHT)]
    if bias:
        ins.append(inp("b", dt, (24,), g, BK.WEIGHT))
    check(K.LAYERNORM, ins, [out("y", dt, (5, 24))], {"hidden": 24, "eps": 1e-5}, threads)


# ---------------------------------------------------------------------------------------- linear


@pytest.mark.parametrize("op", [K.GEMV_TILE, K.GEMM_TILE])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("threads", THREADS)
def test_linear_tile_writes_its_columns(op: InstructionKind, dt: DType, threads: int) -> None:
    g = gen(12)
    m = 1 if op is K.GEMV_TILE else 3
    params = {"K": 20, "M_tile": m, "m_off": 0}
    tiled(
        op,
        [inp("x", dt, (m, 20), g), inp("w", dt, (12, 20), g, BK.WEIGHT)],
        out("y", dt, (m, 12)),
        params,
        [(0, 4), (4, 5), (9, 3)],
        threads,
    )


@pytest.mark.parametrize("threads", (1, 4))
def test_linear_bias_and_whole_matrix_default(threads: int) -> None:
    g = gen(13)
    check(
        K.GEMM_TILE,
        [
            inp("x", DType.BF16, (2, 9), g),
            inp("w", DType.F32, (7, 9), g, BK.WEIGHT),
            inp("b", DType.F16, (7,), g, BK.WEIGHT),
        ],
        [out("y", DType.F32, (2, 7))],
        {"K": 9, "M_tile": 2, "m_off": 0, "N_tile": 7, "n_off": 0},
        threads,
    )


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("k, group", [(32, 8), (30, 16), (17, 17), (9, 4)])
@pytest.mark.parametrize("symmetric", [True, False])
def test_quantized_gemv(bits: int, k: int, group: int, symmetric: bool) -> None:
    g = gen(14)
    n = 10
    qw = quantize(torch.randn(n, k, generator=g), bits, group, symmetric)
    qdt = DType.I4 if bits == 4 else (DType.I8 if symmetric else DType.U8)
    ins = [
        inp("x", DType.F16, (2, k), g),
        Operand("qw", qdt, (n, k), BK.WEIGHT, qw.q),
        Operand("scales", DType.F16, tuple(qw.scales.shape), BK.WEIGHT, qw.scales),
    ]
    if qw.zeros is not None:
        ins.append(Operand("zeros", DType.F16, tuple(qw.zeros.shape), BK.WEIGHT, qw.zeros))
    params = {"K": k, "qdtype": int(DType.I4 if bits == 4 else DType.I8), "group": group}
    for threads in (1, 4):
        # zero points make a 4th input, which the validator's arity (2..3) refuses: numerics only
        tiled(
            K.GEMV_TILE,
            ins,
            out("y", DType.F32, (2, n)),
            params,
            [(0, 3), (3, 6), (9, 1)],
            threads,
            unvalidated=not symmetric,
        )


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("zeros", [False, True])
def test_dequant(bits: int, zeros: bool) -> None:
    g = gen(15)
    qw = quantize(torch.randn(6, 24, generator=g), bits, 8, not zeros)
    qdt = DType.I4 if bits == 4 else (DType.U8 if zeros else DType.I8)
    ins = [Operand("q", qdt, (6, 24), value=qw.q), Operand("s", DType.F16, (6, 3), value=qw.scales)]
    if zeros:
        ins.append(Operand("z", DType.F16, (6, 3), value=qw.zeros))
    params = {"qdtype": int(DType.I4 if bits == 4 else DType.I8), "group": 8}
    for dt in FLOATS:
        check(K.DEQUANT, ins, [out("y", dt, (6, 24))], params)


def test_dequant_unpacked_levels_and_default_group() -> None:
    g = gen(16)
    q = Operand("q", DType.I8, (4, 6), value=torch.randint(-8, 8, (4, 6), generator=g).to(torch.int8))
    check(
        K.DEQUANT,
        [q, inp("s", DType.F32, (4, 1), g)],
        [out("y", DType.F32, (4, 6))],
        {"qdtype": 7, "group": 6},
    )


# ---------------------------------------------------------------------------------------- attention


def attention_operands(
    g: torch.Generator, dt: DType, n_heads: int, n_kv: int, hd: int, seq: int, batch: int | None
) -> list[Operand]:
    lead = () if batch is None else (batch,)
    return [
        inp("q", dt, (*lead, n_heads, hd), g),
        inp("k", dt, (*lead, seq, n_kv, hd), g, BK.KV_CACHE),
        inp("v", dt, (*lead, seq, n_kv, hd), g, BK.KV_CACHE),
    ]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("n_heads, n_kv", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("threads", (1, 3, 8))
def test_attention_tile(dt: DType, n_heads: int, n_kv: int, threads: int) -> None:
    g = gen(17)
    ops = attention_operands(g, dt, n_heads, n_kv, 8, 10, None)
    params = {
        "head_dim": 8,
        "n_heads": n_heads,
        "n_kv_heads": n_kv,
        "kv_start": 2,
        "kv_len": 7,
        "scale": 0.35,
    }
    check(K.ATTENTION_TILE, ops, [out("o", dt, (1, n_heads * 8))], params, threads)


@pytest.mark.parametrize("threads", (1, 4))
def test_attention_batched(threads: int) -> None:
    g = gen(18)
    ops = attention_operands(g, DType.BF16, 4, 2, 16, 9, 3)
    check(
        K.ATTENTION_TILE,
        ops,
        [out("o", DType.F32, (3, 64))],
        {"head_dim": 16, "n_heads": 4, "n_kv_heads": 2, "kv_start": 0, "kv_len": 5, "scale": 0.3},
        threads,
    )


def test_attention_long_window_spans_several_chunks() -> None:
    """A window longer than the scratch chunk exercises the online-softmax rescaling."""
    g = gen(19)
    ops = attention_operands(g, DType.F32, 2, 1, 4, 6000, None)
    params = {"head_dim": 4, "n_heads": 2, "n_kv_heads": 1, "kv_start": 0, "kv_len": 6000, "scale": 0.5}
    check(K.ATTENTION_TILE, ops, [out("o", DType.F32, (1, 8))], params, 8)


@pytest.mark.parametrize("dt", FLOATS)
def test_split_kv_partials_and_combine(dt: DType) -> None:
    """PARTIAL_WRITE shards (one of them empty) and ATTENTION_COMBINE, chained in one program."""
    g = gen(20)
    n_heads, n_kv, hd, seq = 4, 2, 8, 12
    b = ProgramBuilder()
    q = b.new_buffer("q", BK.IO_INPUT, dt, (n_heads, hd))
    kc = b.new_buffer("k", BK.KV_CACHE, dt, (seq, n_kv, hd))
    vc = b.new_buffer("v", BK.KV_CACHE, dt, (seq, n_kv, hd))
    windows = [(0, 5), (5, 7), (12, 0)]
    parts = [b.new_buffer(f"p{i}", BK.ACTIVATION, DType.F32, (n_heads, hd + 2)) for i in range(len(windows))]
    o = b.new_buffer("o", BK.IO_OUTPUT, dt, (1, n_heads * hd))
    done = b.new_counter("partials")
    for (start, length), p in zip(windows, parts, strict=True):
        b.add_task(
            K.ATTENTION_TILE,
            [q, kc, vc],
            [p],
            out_counter=done,
            params={
                "head_dim": hd,
                "n_heads": n_heads,
                "n_kv_heads": n_kv,
                "kv_start": start,
                "kv_len": length,
                "flags": 2,
                "scale": hd**-0.5,
            },
        )
    b.add_task(K.ATTENTION_COMBINE, parts, [o], waits=[(done, len(windows))], params={"head_dim": hd})
    prog = b.build()
    inputs = {"q": data(dt, (n_heads, hd), g)}
    kv = {"k": data(dt, (seq, n_kv, hd), g), "v": data(dt, (seq, n_kv, hd), g)}
    ref = ReferenceVM(prog).run({}, inputs, clone(kv))
    for threads in (1, 4):
        got = MegakernelVM(prog, backend="cpu", threads_per_block=threads).run({}, inputs, clone(kv))
        compare(got, ref, exact=False)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(4, 8), (3, 2, 8)])
def test_rope(dt: DType, shape: tuple[int, ...]) -> None:
    g = gen(21)
    slabs = shape[0] if len(shape) == 3 else 2
    pos = Operand("pos", DType.I32, (slabs,), value=torch.tensor([7, 300, 5][:slabs], dtype=torch.int32))
    check(K.ROPE, [inp("x", dt, shape, g), pos], [out("y", dt, shape)], {"head_dim": 8, "theta": 500000.0})
    check(K.ROPE, [inp("x", dt, shape, g), pos], [out("y", dt, shape)], {"head_dim": 8, "theta": 10000.0})


# ---------------------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("op", [K.ADD, K.MUL, K.SILU_MUL])
@pytest.mark.parametrize("dt", FLOATS)
def test_binary(op: InstructionKind, dt: DType) -> None:
    g = gen(22)
    check(op, [inp("a", dt, (3, 7), g), inp("b", dt, (3, 7), g)], [out("y", dt, (3, 7))], {})


@pytest.mark.parametrize("op", [K.ADD, K.MUL, K.SILU_MUL])
def test_binary_broadcasts_and_reshapes(op: InstructionKind) -> None:
    g = gen(23)
    check(
        op,
        [inp("a", DType.F16, (2, 1, 5), g), inp("b", DType.F32, (3, 1), g)],
        [out("y", DType.BF16, (6, 5))],
        {},
        unvalidated=True,
    )
    check(
        op,
        [inp("a", DType.F32, (1, 5), g), inp("b", DType.F32, (5,), g)],
        [out("y", DType.F32, (4, 5))],
        {},
        unvalidated=True,
    )


@pytest.mark.parametrize("dt", FLOATS)
def test_gelu_and_scale(dt: DType) -> None:
    g = gen(24)
    check(K.GELU, [inp("x", dt, (4, 9), g)], [out("y", dt, (4, 9))], {})
    check(K.MUL, [inp("x", dt, (4, 9), g)], [out("y", dt, (4, 9))], {"scale": -0.75})
    check(K.MUL, [inp("x", dt, (4, 9), g)], [out("y", dt, (4, 9))], {})


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("dim", [-1, 0, 1, 2, -3])
def test_softmax(dt: DType, dim: int) -> None:
    g = gen(25)
    check(K.SOFTMAX, [inp("x", dt, (3, 4, 5), g)], [out("y", dt, (3, 4, 5))], {"dim": dim}, 3)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_allreduce_shard(n: int) -> None:
    g = gen(26)
    ins = [inp(f"s{i}", FLOATS[i % 3], (2, 6) if i % 2 == 0 else (6,), g) for i in range(n)]
    check(K.ALLREDUCE_SHARD, ins, [out("y", DType.F32, (2, 6))], {})


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("out_dt", [DType.I32])
@pytest.mark.parametrize("threads", THREADS)
def test_sample_argmax(dt: DType, out_dt: DType, threads: int) -> None:
    g = gen(27)
    logits = data(dt, (3, 50), g)
    logits[1, 7] = logits[1, 30] = logits[1].max() + 1  # a tie: the lowest index wins
    logits[2, 11] = float("nan")  # NaN wins, as in torch
    check(
        K.SAMPLE_ARGMAX,
        [Operand("logits", dt, (3, 50), value=logits)],
        [out("tok", out_dt, (3,))],
        {},
        threads,
    )


# ---------------------------------------------------------------------------------------- FUSED


def test_fused_recipe_matches_the_unfused_steps() -> None:
    """GEMV into a scratch, + residual, RMSNORM into a float64 scratch, scale to the final output."""
    g = gen(28)
    recipe = {
        "steps": [
            {
                "op": int(K.GEMV_TILE),
                "args": [{"in": 0}, {"in": 1}],
                "out": 0,
                "params": {"K": 8, "N_tile": 6, "n_off": 0},
                "out_shape": [1, 6],
                "out_dtype": "float32",
            },
            {"op": int(K.ADD), "args": [{"s": 0}, {"in": 2}], "out": 1},
            {
                "op": int(K.RMSNORM),
                "args": [{"s": 1}, {"in": 3}],
                "out": 2,
                "params": {"hidden": 6, "eps": 1e-6},
                "out_dtype": "float64",
            },
            {"op": int(K.MUL), "args": [{"s": 2}], "out": "final", "params": {"scale": 2.0}},
        ]
    }
    ins = [
        inp("x", DType.F32, (1, 8), g),
        inp("w", DType.F32, (6, 8), g, BK.WEIGHT),
        inp("r", DType.BF16, (1, 6), g),
        inp("nw", DType.F32, (6,), g, BK.WEIGHT),
    ]
    for threads in (1, 4):
        check(K.FUSED, ins, [out("y", DType.F16, (1, 6))], {"recipe": recipe}, threads)


def test_fused_integer_scratch() -> None:
    g = gen(29)
    recipe = {
        "steps": [
            {
                "op": int(K.SAMPLE_ARGMAX),
                "args": [{"in": 0}],
                "out": 0,
                "out_shape": [1],
                "out_dtype": "int32",
            },
            {"op": int(K.EMBED), "args": [{"s": 0}, {"in": 1}], "out": -1, "params": {"hidden": 4}},
        ]
    }
    check(
        K.FUSED,
        [inp("logits", DType.F32, (1, 9), g), inp("table", DType.F16, (9, 4), g, BK.WEIGHT)],
        [out("y", DType.F32, (1, 4))],
        {"recipe": recipe},
    )


def test_every_opcode_is_covered() -> None:
    """The tests above name every opcode (a new opcode must come with its device test)."""
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    missing = [k.name for k in InstructionKind if f"K.{k.name}" not in source]
    assert not missing


def test_absent_params_take_the_reference_defaults() -> None:
    """Params the validator requires but the semantics default (run past the validator, numerics
    only): the device reads the presence mask and applies the same defaults as amkspec.semantics."""
    g = gen(30)
    ops = attention_operands(g, DType.F32, 4, 2, 8, 6, None)
    check(
        K.ATTENTION_TILE,
        ops,
        [out("o", DType.F32, (1, 32))],
        {"head_dim": 8, "n_kv_heads": 2},
        unvalidated=True,
    )
    lin = [inp("x", DType.F32, (2, 5), g), inp("w", DType.F32, (3, 5), g, BK.WEIGHT)]
    check(K.GEMV_TILE, lin, [out("y", DType.F32, (2, 3))], {}, unvalidated=True)
    q = Operand("q", DType.I8, (2, 8), value=torch.randint(-9, 9, (2, 8), generator=g).to(torch.int8))
    check(K.DEQUANT, [q, inp("s", DType.F16, (2, 1), g)], [out("y", DType.F32, (2, 8))], {}, unvalidated=True)
    norm = [inp("x", DType.F32, (2, 6), g), inp("w", DType.F32, (6,), g, BK.WEIGHT)]
    check(K.LAYERNORM, norm, [out("y", DType.F32, (2, 6))], {}, unvalidated=True)
    check(K.RMSNORM, norm, [out("y", DType.F32, (2, 6))], {}, unvalidated=True)


def test_zero_valued_params_are_values_not_absences() -> None:
    g = gen(31)
    check(K.MUL, [inp("x", DType.F32, (2, 3), g)], [out("y", DType.F32, (2, 3))], {"scale": 0.0})
    check(K.SOFTMAX, [inp("x", DType.F32, (4, 3), g)], [out("y", DType.F32, (4, 3))], {"dim": 0})
    ops = attention_operands(g, DType.F32, 2, 2, 4, 5, None)
    params = {"head_dim": 4, "n_heads": 2, "n_kv_heads": 2, "kv_start": 0, "kv_len": 3, "scale": 0.0}
    check(K.ATTENTION_TILE, ops, [out("o", DType.F32, (1, 8))], params)


@pytest.mark.parametrize("threads", [64, 100])
def test_wide_blocks(threads: int) -> None:
    """Blocks wider than a warp: GEMV thread groups take pairs in passes (100: a partial group),
    and the block reductions run deeper trees."""
    g = gen(32)
    check(
        K.GEMV_TILE,
        [inp("x", DType.F32, (1, 70), g), inp("w", DType.BF16, (5, 70), g, BK.WEIGHT)],
        [out("y", DType.F32, (1, 5))],
        {"K": 70, "N_tile": 5, "n_off": 0},
        threads,
    )
    norm = [inp("x", DType.F16, (2, 300), g), inp("w", DType.F32, (300,), g, BK.WEIGHT)]
    check(K.RMSNORM, norm, [out("y", DType.F32, (2, 300))], {"hidden": 300, "eps": 1e-6}, threads)
    ops = attention_operands(g, DType.F32, 4, 2, 8, 150, None)
    params = {"head_dim": 8, "n_heads": 4, "n_kv_heads": 2, "kv_start": 3, "kv_len": 140, "scale": 0.3}
    check(K.ATTENTION_TILE, ops, [out("o", DType.F32, (1, 32))], params, threads)
    check(
        K.SAMPLE_ARGMAX, [inp("logits", DType.F32, (2, 333), g)], [out("tok", DType.I32, (2,))], {}, threads
    )
