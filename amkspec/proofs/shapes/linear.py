"""GEMV_TILE, GEMM_TILE and DEQUANT (spec §7.4, §7.7, chapter 4).

A tile computes ``x @ W[n_off:n_off+N_tile].T`` into ``out[..., n_off:n_off+N_tile]``
with ``W`` in ``[N, K]`` layout. The quantized path (qdtype 6/7 and scales) reads
packed rows of ``W`` and ``[N, ceil(K/group)]`` scales, or with ``flags`` AFFINE (the
extension of §7.9) ``[N, ceil(K/group), 2]`` (scale, offset) pairs.
"""

from __future__ import annotations

from amkspec.ir import DType, QuantFlags
from amkspec.proofs.shapes import codes as C
from amkspec.proofs.shapes.context import OpContext, Operand, Rule

QUANT_DTYPES = {6: DType.I8, 7: DType.I4}
"""qdtype param → the dtype of the packed weight buffer (spec §7.7)."""
_AFFINE = int(QuantFlags.AFFINE)

MATMUL_RULES = (
    Rule(C.ROW_MISMATCH, "`x` and `out` have a last dim and the same number of rows `prod(shape[:-1])`"),
    Rule(C.WEIGHT_LAYOUT, "`W` is rank 2 `[N, K]` with `K == x.shape[-1]`"),
    Rule(C.K_PARAM, "param `K` (when given) `== x.shape[-1]`"),
    Rule(
        C.TILE_OUTSIDE_OUTPUT,
        "`n_off >= 0`, `N_tile > 0`, `n_off + N_tile <= out.shape[-1]`; "
        "GEMM with `m_off`/`M_tile`: rows `[m_off, m_off+M_tile)` inside out's rows",
    ),
    Rule(C.TILE_OUTSIDE_WEIGHT, "`n_off + N_tile <= N` (rows of `W`, of scales and zeros)"),
    Rule(C.BIAS_LENGTH, "fp path with a 3rd input: bias is 1-D with `>= n_off + N_tile` entries"),
    Rule(C.INTEGER_FP_WEIGHT, "fp path: `W` has a floating-point dtype"),
    Rule(C.QUANT_WITHOUT_SCALES, "`qdtype` 6 or 7 needs a scales input (a device switches on qdtype alone)"),
    Rule(
        C.PACKED_DTYPE,
        "quantized path: `W.dtype` is I8 for qdtype 6, I4 for qdtype 7 (logical shape `[N, K]`)",
    ),
    Rule(C.GROUP_NOT_POSITIVE, "quantized path: `group > 0` (default `K`)"),
    Rule(
        C.SCALES_SHAPE,
        "quantized path: scales (and zeros) are `[N, ceil(K / group)]`; with `flags & 4` (AFFINE) "
        "the (scale, offset) table is `[N, ceil(K / group), 2]`",
    ),
    Rule(C.AFFINE_MISUSE, "`flags & 4` (AFFINE) only on the quantized path"),
)

DEQUANT_RULES = (
    Rule(C.GROUP_NOT_POSITIVE, "`group > 0` (default `q.shape[-1]`), `q` has rank >= 1"),
    Rule(C.GROUP_NOT_DIVIDING, "`q.shape[-1] % group == 0`"),
    Rule(
        C.SCALES_SHAPE,
        "scales (and zeros) numel `== q.numel / group`; with `flags & 4` (AFFINE) the (scale, offset) "
        "table's numel `== 2 * q.numel / group`",
    ),
    Rule(C.AFFINE_MISUSE, "`flags & 4` (AFFINE) takes no zeros input"),
    Rule(C.NUMEL_MISMATCH, "`out.numel == q.numel`"),
)


def _affine(ctx: OpContext) -> bool:
    """Whether the task's ``flags`` select the affine (scale, offset) table (a non-int flags: no)."""
    return bool((ctx.param("flags", 0) or 0) & _AFFINE)


def check_matmul(ctx: OpContext) -> None:
    """Spec §7 GEMV_TILE/GEMM_TILE: the tile stays inside x, W, bias/scales and out."""
    x, w, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if x.rank == 0 or out.rank == 0 or x.rows != out.rows:
        ctx.fail(
            C.ROW_MISMATCH,
            f"computes {x.rows if x.rank else 'no'} row(s) of {x.name} "
            f"{list(x.shape)} into {out.name} {list(out.shape)}",
            [x, out],
        )
        return
    k = x.shape[-1]
    if w.rank != 2 or w.shape[1] != k:
        ctx.fail(
            C.WEIGHT_LAYOUT,
            f"multiplies {x.name} (K = {k}) by {w.name} {list(w.shape)}, which is not [N, {k}]",
            [x, w],
        )
        return
    k_param = ctx.param("K")
    if k_param is not None and k_param != k:
        ctx.fail(C.K_PARAM, f"has param K = {k_param} but {x.name} has last dim {k}", [x])
    qdtype = ctx.param("qdtype", 0)
    if qdtype in QUANT_DTYPES and len(ctx.inputs) < 3:
        ctx.fail(
            C.QUANT_WITHOUT_SCALES,
            f"has qdtype {qdtype} but no scales input (a device reads scales past its inputs)",
            [w],
        )
        return
    if qdtype in QUANT_DTYPES:
        _check_quantized(ctx, qdtype, k)
    else:
        if _affine(ctx):
            ctx.fail(C.AFFINE_MISUSE, f"has flags AFFINE but qdtype {qdtype} is not quantized (6 or 7)", [w])
        _check_fp(ctx)
    _check_row_tile(ctx, out)


def _check_fp(ctx: OpContext) -> None:
    w, out = ctx.inputs[1], ctx.outputs[0]
    if w.dtype is not None and not w.dtype.is_float:
        ctx.fail(
            C.INTEGER_FP_WEIGHT,
            f"takes the floating-point path over {w.name} of dtype "
            f"{w.dtype.name} (quantized weights need qdtype 6/7 and scales)",
            [w],
        )
    tile = _tile(ctx, w.shape[0], out)
    if tile is None or len(ctx.inputs) < 3:
        return
    bias, end = ctx.inputs[2], tile[1]
    if bias.rank != 1 or bias.shape[0] < end:
        ctx.fail(
            C.BIAS_LENGTH,
            f"adds bias entries [{tile[0]}, {end}) of {bias.name} {list(bias.shape)}, "
            f"which is not 1-D with at least {end} entries",
            [bias],
        )


def _check_quantized(ctx: OpContext, qdtype: int, k: int) -> None:
    w, scales, out = ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    want = QUANT_DTYPES[qdtype]
    if w.dtype is not None and w.dtype is not want:
        ctx.fail(
            C.PACKED_DTYPE,
            f"has qdtype {qdtype} but packed weight {w.name} has dtype {w.dtype.name}, not {want.name}",
            [w],
        )
    _tile(ctx, w.shape[0], out, default_n=scales.shape[0] if scales.rank else None)
    group = ctx.param("group", k)
    if group is None:
        return
    if group <= 0:
        ctx.fail(C.GROUP_NOT_POSITIVE, f"has group = {group}; groups must have a positive size", [w])
        return
    n_groups = -(-k // group)
    affine = _affine(ctx)
    expect = (w.shape[0], n_groups, 2) if affine else (w.shape[0], n_groups)
    what = "(scale, offset) table" if affine else "scales"
    for extra in ctx.inputs[2:]:
        if extra.shape != expect:
            ctx.fail(
                C.SCALES_SHAPE,
                f"reads {extra.name} {list(extra.shape)} as the {what} of "
                f"{w.name} [{w.shape[0]}, {k}] with group {group}; it must be {list(expect)}",
                [extra, w],
            )


def _tile(ctx: OpContext, n_rows: int, out: Operand, default_n: int | None = None) -> tuple[int, int] | None:
    """Check the column tile against out and the weight rows; return ``(n_off, end)`` when sane."""
    width = out.shape[-1]
    tile = ctx.span(
        C.TILE_OUTSIDE_OUTPUT,
        ("n_off", "N_tile"),
        n_rows if default_n is None else default_n,
        width,
        1,
        lambda n_off, end: f"writes columns [{n_off}, {end}) of {out.name} whose last dim is {width}",
        out,
    )
    if tile is None:
        return None
    n_off, end = tile
    w = ctx.inputs[1]
    if end > n_rows:
        ctx.fail(
            C.TILE_OUTSIDE_WEIGHT, f"reads rows [{n_off}, {end}) of {w.name} which has {n_rows} rows", [w]
        )
        return None
    return n_off, end


def _check_row_tile(ctx: OpContext, out: Operand) -> None:
    """GEMM_TILE ``m_off``/``M_tile``, when given, stay inside out's rows (a bound on the claim:
    the semantics and the footprint write every row whatever they say)."""
    if "m_off" not in ctx.params and "M_tile" not in ctx.params:
        return
    ctx.span(
        C.TILE_OUTSIDE_OUTPUT,
        ("m_off", "M_tile"),
        out.rows,
        out.rows,
        1,
        lambda m_off, end: f"claims rows [{m_off}, {end}) of {out.name} which has {out.rows} rows",
        out,
    )


def check_dequant(ctx: OpContext) -> None:
    """Spec §7 DEQUANT: ``q`` viewed ``[..., n_groups, group]``, scales ``[..., n_groups, 1]``."""
    q, out = ctx.inputs[0], ctx.outputs[0]
    group = ctx.param("group", q.shape[-1] if q.rank else None)
    if q.rank == 0 or group is None:
        if q.rank == 0:
            ctx.fail(C.GROUP_NOT_POSITIVE, f"dequantizes {q.name} of rank 0 (no last dim to group)", [q])
        return
    if group <= 0:
        ctx.fail(C.GROUP_NOT_POSITIVE, f"has group = {group}; groups must have a positive size", [q])
        return
    if q.shape[-1] % group:
        ctx.fail(
            C.GROUP_NOT_DIVIDING,
            f"groups the last dim {q.shape[-1]} of {q.name} by {group}, which does not divide it",
            [q],
        )
        return
    affine = _affine(ctx)
    if affine and len(ctx.inputs) > 2:
        ctx.fail(C.AFFINE_MISUSE, f"has flags AFFINE and a zeros input {ctx.inputs[2].name}", [ctx.inputs[2]])
        return
    n_scales = (2 if affine else 1) * (q.numel // group)
    what = "(scale, offset) entries" if affine else "scales"
    for extra in ctx.inputs[1:]:
        if extra.numel != n_scales:
            ctx.fail(
                C.SCALES_SHAPE,
                f"needs {n_scales} {what} for {q.name} {list(q.shape)} with group "
                f"{group} but {extra.name} has {extra.numel}",
                [extra, q],
            )
    if out.numel != q.numel:
        ctx.fail(
            C.NUMEL_MISMATCH,
            f"writes {q.numel} elements into {out.name} {list(out.shape)} ({out.numel} elements)",
            [q, out],
        )
