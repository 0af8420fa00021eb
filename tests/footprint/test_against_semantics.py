"""The footprint module states exactly what the reference numerics read and write (spec §3.3, §7).

For every opcode (FUSED recipes included) hypothesis draws params, shapes, dtypes and offsets,
runs the task on shadow memory (:mod:`tests.semantics.shadow`) and compares the touched stored
elements with :func:`amkspec.footprint.task_footprint`, element by element, for reads and
writes. The one data-dependent read (EMBED's table rows) is checked against the rows its ids
select, and must lie inside the (inexact) footprint.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amkspec.footprint import Region, task_footprint
from amkspec.ir import Buffer, BufferKind, DType, InstructionKind, QuantFlags, Task
from amkspec.semantics import torch_dtype
from tests.semantics.shadow import Case, read, tensor_for, written

K = InstructionKind
FLOATS = st.sampled_from([DType.F32, DType.F16, DType.BF16])
dims = st.integers(1, 4)


class _Builder:
    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.buffers: dict[int, Buffer] = {}
        self.domain: dict[int, int] = {}
        self.fixed: dict[int, torch.Tensor] = {}

    def buf(
        self, shape: tuple[int, ...], dtype: DType | None = None, kind: BufferKind = BufferKind.ACTIVATION
    ) -> int:
        bid = len(self.buffers)
        dt = dtype if dtype is not None else self.draw(FLOATS)
        self.buffers[bid] = Buffer(bid, f"b{bid}", kind, dt, shape)
        return bid

    def case(self, op: K, params: dict[str, Any], inputs: list[int], outputs: list[int]) -> Case:
        gen = torch.Generator().manual_seed(self.draw(st.integers(0, 2**16)))
        values = {b: self.fixed.get(b, tensor_for(buf, gen)) for b, buf in self.buffers.items()}
        return Case(op, params, self.buffers, inputs, outputs, values, self.domain)


def _elementwise(draw: Any, b: _Builder, op: K) -> Case:
    r, c = draw(dims), draw(dims)
    n_in = {K.GELU: 1, K.SOFTMAX: 1, K.COPY: 1, K.SILU_MUL: 2, K.ADD: 2, K.RMSNORM: 2}.get(op)
    if n_in is None:
        n_in = draw(st.integers(1, 3))
    shapes = [(r, c)] + [draw(st.sampled_from([(r, c), (c,), (1, c)])) for _ in range(n_in - 1)]
    if op is K.RMSNORM:
        shapes = [(r, c), (c,)]
    ins = [b.buf(s) for s in shapes]
    extra = [b.buf((r, c))] if op in (K.ADD, K.GELU) and draw(st.booleans()) else []
    out = b.buf((r, c))
    params: dict[str, Any] = {}
    if op is K.MUL and n_in == 1:
        params["scale"] = draw(st.sampled_from([0.5, 2.0]))
    if op is K.SOFTMAX:
        params["dim"] = draw(st.sampled_from([-1, 0, 1]))
    if op is K.RMSNORM:
        params["hidden"] = c
    return b.case(op, params, ins + extra, [out])


def _layernorm(draw: Any, b: _Builder) -> Case:
    r, c = draw(dims), draw(dims)
    ins = [b.buf((r, c)), b.buf((c,))] + ([b.buf((c,))] if draw(st.booleans()) else [])
    return b.case(K.LAYERNORM, {"hidden": c}, ins, [b.buf((r, c))])


def _argmax(draw: Any, b: _Builder) -> Case:
    r, v = draw(dims), draw(st.integers(2, 5))
    return b.case(K.SAMPLE_ARGMAX, {}, [b.buf((r, v))], [b.buf((r,), DType.I32)])


def _embed(draw: Any, b: _Builder) -> Case:
    n, vocab, h = draw(dims), draw(st.integers(2, 5)), draw(dims)
    ids = b.buf((n,), DType.I32)
    b.domain[ids] = vocab
    chosen = draw(st.lists(st.integers(0, vocab - 1), min_size=n, max_size=n))
    b.fixed[ids] = torch.tensor(chosen, dtype=torch.int32)
    table = b.buf((vocab, h), kind=BufferKind.WEIGHT)
    out = b.buf(draw(st.sampled_from([(n, h), (n * h,)])))
    return b.case(K.EMBED, {"hidden": h}, [ids, table], [out])


def _kv_append(draw: Any, b: _Builder) -> Case:
    seq, nkv, hd = draw(st.integers(2, 5)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    if draw(st.booleans()):
        batch = draw(st.integers(1, 2))
        cache = b.buf((batch, seq, nkv, hd), kind=BufferKind.KV_CACHE)
        new = b.buf((batch, nkv * hd))
        pos = draw(st.integers(0, seq - 1))
    else:
        rows = draw(st.integers(1, seq))
        cache = b.buf((seq, nkv, hd), kind=BufferKind.KV_CACHE)
        new = b.buf(draw(st.sampled_from([(rows, nkv * hd), (rows, nkv, hd)])))
        pos = draw(st.integers(0, seq - rows))
    return b.case(K.KV_APPEND, {"pos": pos}, [new, cache], [cache])


def _away_from_zero(draw: Any, shape: tuple[int, ...], dtype: DType) -> torch.Tensor:
    """Values of magnitude in [0.5, 1]: a quantized weight's level change of 8 then moves the output
    by at least 2, above the rounding of any output dtype (a near-zero activation or scale would
    hide a real read from the shadow memory)."""
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    magnitude = 0.5 + 0.5 * torch.rand(shape, generator=gen)
    sign = torch.where(torch.rand(shape, generator=gen) < 0.5, -1.0, 1.0)
    return (magnitude * sign).to(torch_dtype(dtype))


def _linear(draw: Any, b: _Builder, op: K) -> Case:
    m = 1 if op is K.GEMV_TILE else draw(dims)
    k, n = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    n_tile = draw(st.integers(1, n))
    n_off = draw(st.integers(0, n - n_tile))
    params: dict[str, Any] = {"n_off": n_off, "N_tile": n_tile, "K": k}
    if op is K.GEMM_TILE:
        params.update(m_off=draw(st.integers(0, m - 1)), M_tile=1)
    x = b.buf((m, k))
    out = b.buf((m, n))
    quant = draw(st.sampled_from([None, DType.I8, DType.I4]))
    if quant is not None:
        b.fixed[x] = _away_from_zero(draw, (m, k), b.buffers[x].dtype)
    if quant is None:
        ins = [x, b.buf((n, k), kind=BufferKind.WEIGHT)]
        if draw(st.booleans()):
            ins.append(b.buf((n,), kind=BufferKind.WEIGHT))
    else:
        group = draw(st.integers(1, k))
        groups = math.ceil(k / group) + draw(st.integers(0, 1))
        params.update(qdtype=int(quant), group=group)
        affine = draw(st.booleans())
        table = (n, groups, 2) if affine else (n, groups)
        if affine:
            params["flags"] = int(QuantFlags.AFFINE)
        ins = [x, b.buf((n, k), quant, BufferKind.WEIGHT), b.buf(table, DType.F16, BufferKind.WEIGHT)]
        b.fixed[ins[2]] = _away_from_zero(draw, table, DType.F16)
        if not affine and draw(st.booleans()):
            ins.append(b.buf((n, groups), DType.F16, BufferKind.WEIGHT))
    return b.case(op, params, ins, [out])


def _attention(draw: Any, b: _Builder) -> Case:
    nkv = draw(st.integers(1, 2))
    nh = nkv * draw(st.integers(1, 2))
    hd, seq = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    start = draw(st.integers(0, seq))
    length = draw(st.integers(0, seq - start))
    batched = draw(st.booleans())
    partial = not batched and draw(st.booleans())
    lead = (draw(st.integers(1, 2)),) if batched else ()
    q = b.buf((*lead, nh, hd))
    kc = b.buf((*lead, seq, nkv, hd), kind=BufferKind.KV_CACHE)
    vc = b.buf((*lead, seq, nkv, hd), kind=BufferKind.KV_CACHE)
    ins = [q, kc, vc] + ([b.buf((1,))] if draw(st.booleans()) else [])
    out = b.buf((nh, hd + 2) if partial else (*lead, nh * hd))
    params = {"head_dim": hd, "n_heads": nh, "n_kv_heads": nkv, "kv_start": start, "kv_len": length,
              "flags": 2 if partial else 0}
    return b.case(K.ATTENTION_TILE, params, ins, [out])


def _combine(draw: Any, b: _Builder) -> Case:
    nh, hd, parts = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(2, 3))
    ins = []
    for _ in range(parts):
        bid = b.buf((nh, hd + 2), DType.F32)
        t = torch.randn(nh, hd + 2)
        t[:, hd + 1] = t[:, hd + 1].abs() + 0.5
        b.fixed[bid] = t
        ins.append(bid)
    return b.case(K.ATTENTION_COMBINE, {"head_dim": hd}, ins, [b.buf((1, nh * hd))])


def _rope(draw: Any, b: _Builder) -> Case:
    nh, hd = draw(dims), 2 * draw(st.integers(1, 2))
    if draw(st.booleans()):
        slabs = draw(dims)
        x, pos = b.buf((slabs, nh, hd)), b.buf((slabs,), DType.I32)
    else:
        x, pos = b.buf((nh, hd)), b.buf((draw(dims),), DType.I32)
    return b.case(K.ROPE, {"head_dim": hd}, [x, pos], [b.buf(b.buffers[x].shape)])


def _dequant(draw: Any, b: _Builder) -> Case:
    r, k = draw(dims), draw(st.integers(1, 5))
    group = draw(st.integers(1, k))
    groups = math.ceil(k / group) + draw(st.integers(0, 1))
    qtype = draw(st.sampled_from([DType.I8, DType.I4, DType.U8]))
    affine = draw(st.booleans())
    table = (r, groups, 2) if affine else (r, groups)
    ins = [b.buf((r, k), qtype, BufferKind.WEIGHT), b.buf(table, DType.F16, BufferKind.WEIGHT)]
    if not affine and qtype is not DType.I8 and draw(st.booleans()):
        ins.append(b.buf((r, groups), DType.F16, BufferKind.WEIGHT))
    params = {"qdtype": int(DType.I4 if qtype is not DType.I8 else DType.I8), "group": group}
    if affine:
        params["flags"] = int(QuantFlags.AFFINE)
    return b.case(K.DEQUANT, params, ins, [b.buf((r, k), DType.F32)])


def _nop(draw: Any, b: _Builder) -> Case:
    return b.case(K.NOP, {}, [b.buf((2, 2))], [b.buf((2, 2))])


def _fused(draw: Any, b: _Builder) -> Case:
    r, k, n = draw(dims), draw(dims), draw(st.integers(2, 4))
    x, w, g = b.buf((r, k)), b.buf((n, k), kind=BufferKind.WEIGHT), b.buf((r, n))
    out = b.buf((r, n))
    recipe = draw(st.sampled_from(["mlp", "overwrite", "tile", "dead"]))
    tile = draw(st.integers(1, n - 1))
    steps: list[dict[str, Any]]
    if recipe == "mlp":  # GEMV into scratch, then SILU_MUL with a task input
        steps = [
            {"op": "GEMV_TILE", "args": [{"in": 0}, {"in": 1}], "out": 0, "out_shape": [r, n],
             "params": {"N_tile": n}},
            {"op": "SILU_MUL", "args": [{"s": 0}, {"in": 2}], "out": "final"},
        ]
    elif recipe == "overwrite":  # the first final write is overwritten: its input is not read
        steps = [
            {"op": "GELU", "args": [{"in": 2}], "out": "final"},
            {"op": "GEMV_TILE", "args": [{"in": 0}, {"in": 1}], "out": "final", "params": {"N_tile": n}},
        ]
    elif recipe == "tile":  # two final tiles from different inputs
        steps = [
            {"op": "GEMV_TILE", "args": [{"in": 0}, {"in": 1}], "out": "final",
             "params": {"N_tile": tile, "n_off": 0}},
            {"op": "COPY", "args": [{"in": 2}], "out": 0},
            {"op": "GEMV_TILE", "args": [{"in": 0}, {"in": 1}], "out": "final",
             "params": {"N_tile": n - tile, "n_off": tile}},
        ]
    else:  # a scratch nobody consumes: its input is not read
        steps = [
            {"op": "GELU", "args": [{"in": 2}], "out": 0},
            {"op": "GEMV_TILE", "args": [{"in": 0}, {"in": 1}], "out": "final", "params": {"N_tile": n}},
        ]
    return b.case(K.FUSED, {"recipe": {"steps": steps}}, [x, w, g], [out])


@st.composite
def cases(draw: Any, op: K) -> Case:
    b = _Builder(draw)
    special = {
        K.NOP: _nop, K.LAYERNORM: _layernorm, K.SAMPLE_ARGMAX: _argmax, K.EMBED: _embed,
        K.KV_APPEND: _kv_append, K.ATTENTION_TILE: _attention, K.ATTENTION_COMBINE: _combine,
        K.ROPE: _rope, K.DEQUANT: _dequant, K.FUSED: _fused,
    }
    if op in special:
        return special[op](draw, b)
    if op in (K.GEMV_TILE, K.GEMM_TILE):
        return _linear(draw, b, op)
    return _elementwise(draw, b, op)


def _mask(region: Region, buf: Buffer) -> torch.Tensor:
    """The stored elements a logical region covers (packed I4: byte j holds columns 2j, 2j+1)."""
    from amkspec.semantics import storage_shape

    shape = storage_shape(buf.dtype, buf.shape)
    mask = torch.zeros(shape, dtype=torch.bool)
    boxes = region.boxes if region.boxes is not None else (tuple((0, d) for d in buf.shape),)
    for box in boxes:
        if buf.dtype is DType.I4 and box:
            box = (*box[:-1], (box[-1][0] // 2, (box[-1][1] + 1) // 2))
        mask[tuple(slice(lo, hi) for lo, hi in box)] = True
    return mask


def _check(case: Case) -> None:
    masks = written(case)
    assert masks is not None, "the generated task must be one the semantics accept"
    reads = read(case, masks)
    task = Task(id=0, op=case.op, inputs=case.inputs, outputs=case.outputs, params=dict(case.params),
                out_counter=0)
    fp = task_footprint(task, case.buffers)
    for b, mask in masks.items():
        expected = _mask(fp.write(b), case.buffers[b])
        assert torch.equal(mask, expected), f"{case.op.name} writes of {b}: {mask} vs footprint {expected}"
    for b, mask in reads.items():
        region = fp.read(b)
        expected = _mask(region, case.buffers[b])
        if region.exact:
            assert torch.equal(mask, expected), f"{case.op.name} reads of {b}: {mask} vs footprint {expected}"
        else:
            assert not (mask & ~expected).any(), f"{case.op.name} reads outside the footprint of {b}"
    if case.op is K.EMBED:
        table = case.buffers[case.inputs[1]]
        rows = torch.zeros(table.shape[0], dtype=torch.bool)
        rows[case.values[case.inputs[0]].long()] = True
        assert torch.equal(reads[case.inputs[1]].any(dim=1), rows)
        assert fp.read(case.inputs[1]).note
    else:
        assert fp.exact, fp.note


def _op_test(op: K) -> Any:
    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases(op))
    def test(case: Case) -> None:
        _check(case)

    test.__name__ = f"test_footprint_{op.name.lower()}"
    return test


for _op in K:
    globals()[f"test_footprint_{_op.name.lower()}"] = _op_test(_op)


def test_every_opcode_has_a_footprint_test() -> None:
    assert {f"test_footprint_{op.name.lower()}" for op in K} <= set(globals())
