"""ATTENTION_TILE, ATTENTION_COMBINE, ROPE and KV_APPEND (spec §7.5, chapter 4).

Caches are position-major: ``[max_seq, n_kv_heads, head_dim]``, or
``[B, max_seq, n_kv_heads, head_dim]`` in the batched form.
"""

from __future__ import annotations

from amkspec.ir import AttentionFlags
from amkspec.proofs.shapes import codes as C
from amkspec.proofs.shapes.context import OpContext, Operand, Rule
from amkspec.proofs.shapes.pointwise import check_index_dtype

_PARTIAL_WRITE = int(AttentionFlags.PARTIAL_WRITE)
"""The flag's bit as a plain int: ``flags & IntFlag`` runs the enum's Python ``__rand__`` (0.5 µs)."""

ATTENTION_RULES = (
    Rule(
        C.QUERY_LAYOUT,
        "`head_dim > 0`; `q` is `[n_heads, head_dim]` or batched `[B, n_heads, head_dim]` "
        "(`n_heads` default `q.shape[-2]`)",
    ),
    Rule(C.HEADS_DIVIDE, "`n_heads > 0`, `n_kv_heads > 0`, `n_heads % n_kv_heads == 0`"),
    Rule(
        C.CACHE_LAYOUT,
        "k and v caches have one shape: `[max_seq, n_kv_heads, head_dim]` for rank-2 q, "
        "`[B, max_seq, n_kv_heads, head_dim]` for rank-3 q",
    ),
    Rule(C.WINDOW_OUTSIDE_CACHE, "`kv_start >= 0`, `kv_len >= 0`, `kv_start + kv_len <= max_seq`"),
    Rule(
        C.ATTENTION_OUT_NUMEL,
        "`out.numel == B * n_heads * head_dim`, or `n_heads * (head_dim + 2)` "
        "with `flags & 2` (PARTIAL_WRITE) and rank-2 q",
    ),
)
COMBINE_RULES = (
    Rule(
        C.COMBINE_HEAD_DIM,
        "param `head_dim` present and `> 0` (by choice: amkspec's VMs derive it from the partial rows, "
        "the original's reference and device read it)",
    ),
    Rule(
        C.PARTIAL_SHAPE,
        "every partial has `n_heads * (head_dim + 2)` elements "
        "(`n_heads` default `partial0.numel / (head_dim + 2)`, `> 0`)",
    ),
    Rule(C.ATTENTION_OUT_NUMEL, "`out.numel == n_heads * head_dim`"),
)
ROPE_RULES = (
    Rule(C.ROPE_LAYOUT, "`head_dim` even and `> 0`; `x` is rank 2 or 3 with `x.shape[-1] == head_dim`"),
    Rule(C.INDEX_DTYPE, "`positions` has an integer dtype"),
    Rule(C.ROPE_POSITIONS, "rank-3 `x`: `positions.numel == x.shape[0]`; rank 2: at least one position"),
    Rule(C.NUMEL_MISMATCH, "`out.numel == x.numel`"),
)
KV_APPEND_RULES = (
    Rule(C.KV_NOT_IN_PLACE, "`inputs[1]` is the same buffer as `outputs[0]` (the cache)"),
    Rule(
        C.KV_NEW_SHAPE,
        "cache rank 3 `[max_seq, n_kv, hd]`: `new.numel == new.shape[0] * n_kv * hd`; "
        "rank 4 `[B, max_seq, n_kv, hd]`: `new.shape[0] == B`, `new.numel == B * n_kv * hd`",
    ),
    Rule(C.KV_ROWS, "`pos >= 0`; rank 3: `pos + new.shape[0] <= max_seq`; rank 4: `pos < max_seq`"),
)


def check_attention(ctx: OpContext) -> None:
    """Spec §7 ATTENTION_TILE: q, caches, window and output agree with the head params."""
    q, k, v, out = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    hd = ctx.param("head_dim")
    if hd is None:
        return
    if hd <= 0 or q.rank not in (2, 3):
        ctx.fail(C.QUERY_LAYOUT, f"has head_dim = {hd} and q {q.name} {list(q.shape)}", [q])
        return
    n_heads = ctx.param("n_heads", q.shape[-2])
    n_kv = ctx.param("n_kv_heads", n_heads)
    if n_heads is None or n_kv is None:
        return
    if q.shape[-2:] != (n_heads, hd):
        ctx.fail(
            C.QUERY_LAYOUT, f"reads {q.name} {list(q.shape)} as q with {n_heads} heads of head_dim {hd}", [q]
        )
        return
    if n_heads <= 0 or n_kv <= 0 or n_heads % n_kv:
        ctx.fail(C.HEADS_DIVIDE, f"maps {n_heads} query heads onto {n_kv} kv heads")
        return
    batch = q.shape[0] if q.rank == 3 else None
    lead = () if batch is None else (batch,)
    if not _cache_ok(k, v, lead, n_kv, hd):
        form = "[max_seq, n_kv, hd]" if batch is None else f"[{batch}, max_seq, n_kv, hd]"
        ctx.fail(
            C.CACHE_LAYOUT,
            f"reads caches {k.name} {list(k.shape)} and {v.name} {list(v.shape)} "
            f"as {form} with n_kv = {n_kv}, hd = {hd}",
            [k, v],
        )
        return
    max_seq = k.shape[-3]
    _check_window(ctx, k, max_seq)
    flags = ctx.param("flags", 0)
    if flags is None:
        return
    partial = batch is None and bool(flags & _PARTIAL_WRITE)
    want = (batch or 1) * n_heads * (hd + 2 if partial else hd)
    if out.numel != want:
        what = f"{n_heads} x ({hd} + 2) partial rows" if partial else f"{batch or 1} x {n_heads} x {hd}"
        ctx.fail(
            C.ATTENTION_OUT_NUMEL,
            f"writes {what} = {want} elements into {out.name} {list(out.shape)} ({out.numel} elements)",
            [out],
        )


def _cache_ok(k: Operand, v: Operand, lead: tuple[int, ...], n_kv: int, hd: int) -> bool:
    rank = 3 + len(lead)
    return k.shape == v.shape and k.rank == rank and k.shape[:-3] == lead and k.shape[-2:] == (n_kv, hd)


def _check_window(ctx: OpContext, k: Operand, max_seq: int) -> None:
    """The window ``[kv_start, kv_start + kv_len)`` lies inside the cache's ``max_seq`` rows."""
    ctx.span(
        C.WINDOW_OUTSIDE_CACHE,
        ("kv_start", "kv_len"),
        max_seq,
        max_seq,
        0,
        lambda start, end: f"attends to positions [{start}, {end}) of {k.name} which holds {max_seq}",
        k,
    )


def check_combine(ctx: OpContext) -> None:
    """Spec §7 ATTENTION_COMBINE: partial rows ``[acc | m | l]`` merged into ``n_heads * hd``."""
    first, out = ctx.inputs[0], ctx.outputs[0]
    hd = ctx.param("head_dim")
    if "head_dim" not in ctx.params:
        ctx.fail(C.COMBINE_HEAD_DIM, "merges partials without a head_dim param")
        return
    if hd is None or hd <= 0:
        if hd is not None:
            ctx.fail(C.COMBINE_HEAD_DIM, f"merges partials with head_dim = {hd}")
        return
    row = hd + 2
    n_heads = ctx.param("n_heads", first.numel // row)
    if n_heads is None:
        return
    want = n_heads * row
    bad = [p for p in ctx.inputs if p.numel != want]
    if n_heads <= 0 or bad:
        shown = bad or [first]
        names = ", ".join(f"{p.name} {list(p.shape)}" for p in shown)
        ctx.fail(
            C.PARTIAL_SHAPE, f"reads partials as {n_heads} rows of {hd} + 2 = {want} elements: {names}", shown
        )
        return
    if out.numel != n_heads * hd:
        ctx.fail(
            C.ATTENTION_OUT_NUMEL,
            f"writes {n_heads} x {hd} = {n_heads * hd} elements into "
            f"{out.name} {list(out.shape)} ({out.numel} elements)",
            [out],
        )


def check_rope(ctx: OpContext) -> None:
    """Spec §7 ROPE: rotate-half pairs inside ``head_dim``; one position per slab."""
    x, positions, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    check_index_dtype(ctx, positions)
    if out.numel != x.numel:
        ctx.fail(
            C.NUMEL_MISMATCH,
            f"rotates {x.name} {list(x.shape)} into {out.name} {list(out.shape)} "
            f"({x.numel} vs {out.numel} elements)",
            [x, out],
        )
    hd = ctx.param("head_dim")
    if hd is None:
        return
    why = _rope_layout_error(x, hd)
    if why:
        ctx.fail(C.ROPE_LAYOUT, f"rotates {x.name} {list(x.shape)} with head_dim = {hd}: {why}", [x])
        return
    need = x.shape[0] if x.rank == 3 else 1
    if (x.rank == 3 and positions.numel != need) or positions.numel < need:
        ctx.fail(
            C.ROPE_POSITIONS,
            f"needs {'exactly' if x.rank == 3 else 'at least'} {need} position(s) "
            f"for {x.name} {list(x.shape)} but {positions.name} has {positions.numel}",
            [positions, x],
        )


def _rope_layout_error(x: Operand, hd: int) -> str:
    if hd <= 0 or hd % 2:
        return "rotate-half pairs need an even, positive head_dim"
    if x.rank not in (2, 3):
        return "x must be [n_heads, head_dim] or [S, n_heads, head_dim]"
    if x.shape[-1] != hd:
        return f"its last dim is {x.shape[-1]}"
    return ""


def check_kv_append(ctx: OpContext) -> None:
    """Spec §7 KV_APPEND: the new rows land inside the cache it updates in place."""
    new, cache_in, cache = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if cache_in.buffer is None or cache_in.buffer != cache.buffer:
        ctx.fail(
            C.KV_NOT_IN_PLACE,
            f"declares {cache_in.name} as its cache input but writes {cache.name}",
            [cache_in, cache],
        )
    if cache.rank not in (3, 4):
        ctx.fail(
            C.KV_NEW_SHAPE,
            f"appends into {cache.name} {list(cache.shape)}, which is not "
            f"[max_seq, n_kv, hd] or [B, max_seq, n_kv, hd]",
            [cache],
        )
        return
    row = cache.shape[-1] * cache.shape[-2]
    max_seq = cache.shape[-3]
    n_new = new.shape[0] if new.rank else 0
    if cache.rank == 4:
        ok, rows = n_new == cache.shape[0] and new.numel == n_new * row, 1
    else:
        ok, rows = new.rank >= 1 and new.numel == n_new * row, n_new
    if not ok:
        ctx.fail(
            C.KV_NEW_SHAPE,
            f"appends {new.name} {list(new.shape)} into rows of {row} elements "
            f"of {cache.name} {list(cache.shape)}",
            [new, cache],
        )
        return
    pos = ctx.param("pos")
    if pos is not None and (pos < 0 or pos + rows > max_seq):
        ctx.fail(
            C.KV_ROWS,
            f"writes positions [{pos}, {pos + rows}) of {cache.name} which holds {max_seq}",
            [cache],
        )
