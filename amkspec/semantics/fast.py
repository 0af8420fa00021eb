"""Prepared forms of the hottest opcodes (spec §7), for operands that stay put across launches.

``prepare(kind, inputs, outputs, params)`` returns a zero-argument *step* that runs exactly the
torch operations the opcode's reference function (:data:`amkspec.semantics.OP_SEMANTICS`) runs on
those operands: the same kernels on operands of the same dtypes, shapes and strides, so the
results are bit-identical. The operand checks, param parsing and views are done once, here. In
any case that is not the plain one (another dtype, a bias, zero points, a shape that
needs the reshape or broadcast path of ``store``, an integer output, anything that would raise) it
returns None and the caller runs the reference function, which then computes, or raises, as always.

The steps keep references to the operand tensors: they are valid only while those tensors are
the ones the task reads and writes (the ReferenceVM's launch frame, :mod:`amkspec.vm.frame`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from amkspec.ir import AttentionFlags, InstructionKind, QuantFlags, param_default
from amkspec.semantics import attention, edges, linear, movement, quant
from amkspec.semantics.linear import QUANT_CODES
from amkspec.semantics.registry import OpError, Params, Tensor

Step = Callable[[], None]
_K = InstructionKind
_F32 = torch.float32


def _integer(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` holds integers (not bool)."""
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _linear(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """GEMV_TILE/GEMM_TILE without bias or quantization (:func:`amkspec.semantics.linear.linear_tile`)."""
    if len(inputs) == 3 and int(params.get("qdtype", 0)) in QUANT_CODES:
        return _quantized_linear(inputs, outputs, params)
    if len(inputs) != 2 or len(outputs) < 1:
        return None
    x, w_full, out = inputs[0], inputs[1], outputs[0]
    if int(params.get("qdtype", 0)) in QUANT_CODES:
        return None
    n_off = int(params.get("n_off", 0))
    n_tile = int(params.get("N_tile", w_full.shape[0]))
    if x.dtype != _F32 or w_full.dtype != _F32 or w_full.dim() != 2 or x.dim() < 1 or out.dim() < 1:
        return None
    w = w_full[n_off : n_off + n_tile]
    if n_off < 0 or w.shape[0] != n_tile or x.shape[-1] != w.shape[1] or n_off + n_tile > out.shape[-1]:
        return None
    view = out[..., n_off : n_off + n_tile]
    if tuple(view.shape) != (*x.shape[:-1], n_tile):
        return None
    wt = w.T
    if x.dim() == 2 and view.dtype == _F32 and view.is_contiguous() and _apart(view, x, w):
        matmul = torch.matmul

        def into_view() -> None:  # the same product, written in place of a copy
            matmul(x, wt, out=view)

        return into_view

    def step() -> None:
        view.copy_(x @ wt)

    return step


def _quantized_linear(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """The quantized tile ``[x, qW, table]`` with float32 x and out: the reference's
    :func:`~amkspec.semantics.quant.dequantize` of the tile's rows (sliced once, here), then ``x @ W.T``.
    The dequantized rows are kept with a copy of the levels and table they came from, and computed
    again only when those differ (a decode launches the same weights again and again)."""
    x, out = inputs[0], outputs[0] if outputs else None
    if out is None or x.dtype != _F32 or out.dtype != _F32 or x.dim() != 2 or out.dim() != 2:
        return None
    k = int(params.get("K", x.shape[-1]))
    n_off = int(params.get("n_off", 0))
    n_tile = int(params.get("N_tile", inputs[2].shape[0]))
    group = int(params.get("group", k))
    affine = bool(int(params.get("flags", 0)) & QuantFlags.AFFINE)
    q_rows, table = inputs[1][n_off : n_off + n_tile], inputs[2][n_off : n_off + n_tile]
    if n_off < 0 or q_rows.shape[0] != n_tile or table.shape[0] != n_tile or n_off + n_tile > out.shape[-1]:
        return None
    view = out[:, n_off : n_off + n_tile]
    if view.shape != (x.shape[0], n_tile) or x.shape[-1] != k:
        return None
    qdtype = int(params["qdtype"])
    dequantize, reference, error, equal = quant.dequantize, linear.linear_tile, OpError, torch.equal
    kept: list[Tensor] = []  # the levels and table the rows were dequantized from, and the rows

    def step() -> None:
        if not (kept and equal(q_rows, kept[0]) and equal(table, kept[1])):
            kept.clear()
            try:
                w = dequantize(q_rows, table, None, qdtype, group, k, affine)
            except error:  # operands the reference refuses: it raises its error
                reference(inputs, outputs, params)
                return
            kept.extend((q_rows.clone(), table.clone(), w))
        view.copy_(x @ kept[2].T)

    return step


def _span(t: Tensor) -> tuple[int, int]:
    """The bytes ``[first, end)`` of its storage that a tensor's elements lie in."""
    if t.numel() == 0:
        return 0, 0
    first = t.data_ptr()
    last = first + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True)) * t.element_size()
    return first, last + t.element_size()


def _apart(out: Tensor, *inputs: Tensor) -> bool:
    """Whether no input shares a byte with ``out``, so an ``out=`` kernel may write it directly
    (torch refuses an ``out=`` that partly overlaps an input; pages shared by several buffers, as
    page allocation lays them out, can put a task's input and output in one storage)."""
    low, high = _span(out)
    return all(end <= low or high <= start for start, end in map(_span, inputs))


def _rmsnorm(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """RMSNORM on float32 operands (:func:`amkspec.semantics.norm.rmsnorm`)."""
    if len(inputs) < 2 or len(outputs) < 1:
        return None
    x, w, out = inputs[0], inputs[1], outputs[0]
    if x.dtype != _F32 or w.dtype != _F32 or x.dim() < 1:
        return None
    eps = float(params.get("eps", param_default(_K.RMSNORM, "eps")))
    if tuple(out.shape) != tuple(torch.broadcast_shapes(x.shape, w.shape)):
        return None
    rsqrt, nan_rows = torch.rsqrt, edges.nan_rows
    if out.dtype == _F32 and _apart(out, x, w):
        mul, isfinite = torch.mul, torch.isfinite

        def into_out() -> None:
            mean_sq = x.pow(2).mean(-1, keepdim=True)
            mul(x * rsqrt(mean_sq + eps), w, out=out)
            if not bool(isfinite(mean_sq).all()):
                out.copy_(nan_rows(out, mean_sq))

        return into_out

    def step() -> None:
        mean_sq = x.pow(2).mean(-1, keepdim=True)
        out.copy_(nan_rows((x * rsqrt(mean_sq + eps)) * w, mean_sq))

    return step


def _pair(inputs: list[Tensor], outputs: list[Tensor]) -> tuple[Tensor, Tensor, Tensor] | None:
    """Two float32 inputs broadcast together (as ``elementwise._broadcast``) and an output of their shape."""
    if len(inputs) < 2 or len(outputs) < 1 or inputs[0].dtype != _F32 or inputs[1].dtype != _F32:
        return None
    a, b = torch.broadcast_tensors(inputs[0], inputs[1])
    return (a, b, outputs[0]) if outputs[0].shape == a.shape else None


def _add(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """ADD (:func:`amkspec.semantics.elementwise.add`)."""
    pair = _pair(inputs, outputs)
    if pair is None:
        return None
    a, b, out = pair
    if out.dtype == _F32 and _apart(out, a, b):
        add = torch.add

        def into_out() -> None:
            add(a, b, out=out)

        return into_out

    def step() -> None:
        out.copy_(a + b)

    return step


def _silu_mul(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """SILU_MUL (:func:`amkspec.semantics.elementwise.silu_mul`)."""
    pair = _pair(inputs, outputs)
    if pair is None:
        return None
    gate, up, out = pair
    silu = edges.silu
    if out.dtype == _F32 and _apart(out, gate, up):
        mul = torch.mul

        def into_out() -> None:
            mul(silu(gate), up, out=out)

        return into_out

    def step() -> None:
        out.copy_(silu(gate) * up)

    return step


def _embed(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """EMBED (:func:`amkspec.semantics.movement.embed`); ids out of range go to the reference
    function, which raises its error."""
    if len(inputs) < 2 or len(outputs) < 1:
        return None
    ids_in, table, out = inputs[0], inputs[1], outputs[0]
    n_ids = ids_in.numel()
    if table.dim() == 0 or n_ids == 0 or n_ids * table[0].numel() != out.numel():
        return None
    rows_n, shape, dtype, i64 = table.shape[0], out.shape, out.dtype, torch.int64
    aminmax = torch.aminmax
    reference = movement.embed
    if not _integer(ids_in.dtype):  # float ids convert by the spec's rule, in the reference function
        return None
    if n_ids == 1 and table.dtype == dtype and _apart(out, table):

        def one_row() -> None:  # one id: the row itself, copied
            row = int(ids_in)
            if row < 0 or row >= rows_n:
                reference(inputs, outputs, params)
                return
            out.copy_(table[row].reshape(shape))

        return one_row

    def step() -> None:
        ids = ids_in.to(i64).flatten()
        low, high = aminmax(ids)
        if int(low) < 0 or int(high) >= rows_n:
            reference(inputs, outputs, params)
            return
        out.copy_(table.index_select(0, ids).to(dtype).reshape(shape))

    return step


def _rope(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """ROPE on float32 operands (:func:`amkspec.semantics.attention.rope`)."""
    if len(inputs) < 2 or len(outputs) < 1:
        return None
    x, out, positions = inputs[0], outputs[0], inputs[1].flatten()
    hd = int(params["head_dim"])
    half = hd // 2
    if x.dtype != _F32 or hd <= 0 or hd % 2 or x.dim() not in (2, 3) or x.shape[-1] != hd:
        return None
    slabs = 1 if x.dim() == 2 else x.shape[0]
    if positions.numel() < 1 or (x.dim() == 3 and positions.numel() != slabs) or out.shape != x.shape:
        return None
    if positions.data_ptr() != inputs[1].data_ptr():  # flatten copied: it would not follow the input
        return None
    pos = positions[:slabs]
    inv_freq = attention.inv_freq(half, float(params.get("theta", param_default(_K.ROPE, "theta"))))
    x1, x2 = x[..., :half], x[..., half:]
    three = x.dim() == 3
    cos, sin, cat = torch.cos, torch.sin, torch.cat
    direct = out.dtype == _F32  # the halves are computed before cat writes: nothing to overlap

    def step() -> None:
        ang = pos.float()[:, None] * inv_freq
        c, s = cos(ang), sin(ang)
        if three:
            c, s = c[:, None, :], s[:, None, :]
        else:
            c, s = c[0], s[0]
        if direct:
            cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1, out=out)
        else:
            out.copy_(cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1))

    return step


def _attention(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> Step | None:
    """ATTENTION_TILE, unbatched and without PARTIAL_WRITE, on float32 operands
    (:func:`amkspec.semantics.attention.attention_tile`)."""
    if len(inputs) < 3 or len(outputs) < 1:
        return None
    q, k_cache, v_cache, out = inputs[0], inputs[1], inputs[2], outputs[0]
    if k_cache.dim() != 3 or int(params.get("flags", 0)) & AttentionFlags.PARTIAL_WRITE:
        return None
    if q.dtype != _F32 or k_cache.dtype != _F32 or v_cache.dtype != _F32:
        return None
    hd = int(params["head_dim"])
    n_heads = int(params.get("n_heads", q.shape[-2] if q.dim() >= 2 else 1))
    n_kv = int(params.get("n_kv_heads", n_heads))
    if n_kv <= 0 or n_heads % n_kv or k_cache.shape[-2] * n_kv == 0:
        return None
    start = int(params.get("kv_start", 0))
    length = int(params.get("kv_len", k_cache.shape[-3]))
    scale = float(params.get("scale", 1.0 / math.sqrt(hd)))
    if start < 0 or start + max(length, 0) > k_cache.shape[-3] or start + max(length, 0) > v_cache.shape[-3]:
        return None
    rep = n_heads // n_kv
    keys = k_cache[..., start : start + max(length, 0), :, :].movedim(-3, -1)
    values = v_cache[..., start : start + max(length, 0), :, :].movedim(-3, -2)
    qf = q.view(n_kv, rep, hd)  # a view, as q.reshape is for a contiguous q
    batch = torch.broadcast_shapes(qf.shape[:-2], keys.shape[:-2], values.shape[:-2])
    if qf.shape[-1] != keys.shape[-2] or keys.shape[-1] != values.shape[-2]:
        return None
    result = (*batch, rep, values.shape[-1])
    if math.prod(result) != n_heads * hd or math.prod(result) != out.numel():
        return None
    reshape = tuple(out.shape) != (n_heads, hd)
    matmul, softmax = torch.matmul, torch.softmax

    def step() -> None:
        probs = softmax(matmul(qf, keys) * scale, dim=-1)
        value = matmul(probs, values).reshape(n_heads, hd)
        out.copy_(value.reshape(out.shape) if reshape else value)

    return step


_PREPARE: dict[InstructionKind, Callable[[list[Tensor], list[Tensor], Params], Step | None]] = {
    _K.GEMV_TILE: _linear,
    _K.GEMM_TILE: _linear,
    _K.RMSNORM: _rmsnorm,
    _K.ADD: _add,
    _K.SILU_MUL: _silu_mul,
    _K.EMBED: _embed,
    _K.ROPE: _rope,
    _K.ATTENTION_TILE: _attention,
}
"""The opcodes with a prepared form; every other opcode runs its reference function."""


def prepare(
    kind: InstructionKind, inputs: list[Tensor], outputs: list[Tensor], params: Params,
) -> Step | None:
    """The prepared step of one task, or None (see the module doc)."""
    make = _PREPARE.get(kind)
    if make is None or not all(o.dtype.is_floating_point for o in outputs):
        return None
    try:
        return make(inputs, outputs, params)
    except Exception:  # noqa: BLE001 - an unusual operand or param: the reference function decides
        return None
