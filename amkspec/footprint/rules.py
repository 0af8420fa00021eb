"""Per-opcode footprint rules (spec §3.3, §7): the read and write region of each operand
position of one op, from its params and its operands' shapes and dtypes, mirroring what the
semantics do with them (defaults, ``int()`` conversions, slicing, the packed I4 layout).
:func:`op_footprint` is the entry point; a property test runs every opcode on shadow memory
and compares (``tests/footprint/test_against_semantics.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from amkspec.footprint.regions import (
    EMPTY,
    Region,
    along,
    flat_range,
    intersect,
    row_prefix,
    uncovered,
    union,
    whole,
)
from amkspec.ir import AttentionFlags, Buffer, DType, InstructionKind, QuantFlags
from amkspec.ir.opcodes import PARAM_DEFAULTS, RECIPE_DTYPES, opcode_of
from amkspec.ir.shapes import is_shape

# -- operands --------------------------------------------------------------------------------


_BYTES = frozenset({DType.I4, DType.U8})
"""Dtypes the semantics hold as ``uint8`` tensors."""
_I4 = DType.I4
"""Packed two per byte (a module name: an enum member read through its class costs a lookup)."""
_QUANTIZED = (DType.I8, DType.I4)
"""The ``qdtype`` values of a quantized GEMV/GEMM tile."""
_PARTIAL_WRITE = int(AttentionFlags.PARTIAL_WRITE)
"""The flag's bit as a plain int: ``flags & IntFlag`` runs the enum's Python ``__rand__`` (0.5 µs)."""
_AFFINE = int(QuantFlags.AFFINE)


@attrs.frozen
class Operand:
    """What the semantics see of a bound tensor: its stored shape and whether it is ``uint8``.

    ``logical`` is the buffer's logical shape (packed I4: twice the stored last dim, or less).
    """

    stored: tuple[int, ...]
    uint8: bool
    logical: tuple[int, ...]
    _every: Region | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def every(self) -> Region:
        """:func:`whole` of the stored shape, built once per operand (an interned operand is
        read by many tasks' rules)."""
        region = self._every
        if region is None:
            region = whole(self.stored)
            object.__setattr__(self, "_every", region)  # a frozen record: set once, never changed
        return region

    @classmethod
    def of_buffer(cls, buf: Buffer) -> Operand | None:
        shape, dtype = getattr(buf, "shape", None), getattr(buf, "dtype", None)
        if not isinstance(shape, tuple) or not is_shape(shape) or not isinstance(dtype, DType):
            return None
        return cls.of_shape(shape, dtype)

    @classmethod
    def of_shape(cls, shape: tuple[int, ...], dtype: DType) -> Operand:
        """The operand of a buffer whose ``shape`` holds only non-negative ints."""
        stored = (*shape[:-1], (shape[-1] + 1) // 2) if dtype is _I4 and shape else shape
        return cls(stored, dtype in _BYTES, shape)

    @classmethod
    def scratch(cls, shape: tuple[int, ...], uint8: bool = False) -> Operand:
        return cls(shape, uint8, shape)


class _Reject(Exception):
    """The semantics would raise on this task (its footprint is then over-approximated)."""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _Reject(f"param {value!r} is not an int") from exc


def _param(params: Mapping[str, Any], key: str, default: Callable[[], int] | int) -> int:
    """``int(params[key])``, else ``default`` (called when it is a function: a default read
    from the operands is only computed when the param is absent)."""
    if key in params:
        value = params[key]
        return value if type(value) is int else _int(value)
    return default if type(default) is int else default()  # type: ignore[operator]


def _need(params: Mapping[str, Any], key: str) -> int:
    if key not in params:
        raise _Reject(f"missing param {key!r}")
    return _int(params[key])


def _dim(shape: tuple[int, ...], axis: int) -> int:
    if not -len(shape) <= axis < len(shape):
        raise _Reject(f"shape {shape} has no axis {axis}")
    return shape[axis]


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (:func:`_broadcast_axes`, with two shortcuts)."""
    if shapes and shapes.count(shapes[0]) == len(shapes):
        return shapes[0]  # equal shapes broadcast to themselves
    if len(shapes) == 2:  # e.g. RMSNORM's x and weight: one shape the trailing dims of the other
        long, short = shapes if len(shapes[0]) >= len(shapes[1]) else shapes[::-1]
        if long[len(long) - len(short) :] == short:
            return long  # each trailing dim meets itself, the leading ones meet nothing
    return _broadcast_axes(shapes)


def _broadcast_axes(shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """torch's broadcasting, axis by axis from the last: the dims other than 1 must agree."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(-rank, 0):
        dims = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(dims) > 1:
            raise _Reject(f"shapes {shapes} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _storable(value: tuple[int, ...], out: tuple[int, ...]) -> None:
    """``registry.store``: same numel reshapes, otherwise ``copy_`` broadcasting."""
    if value == out or math.prod(value) == math.prod(out):
        return
    if len(value) > len(out) or _broadcast(value, out) != out:
        raise _Reject(f"cannot store {value} into {out}")


# -- per-opcode rules ------------------------------------------------------------------------

Reads = list[Region]
"""One read region per task input position (in the input's stored coordinates)."""
Writes = list[Region]
Rule = Callable[[Mapping[str, Any], list[Operand], list[Operand]], tuple[Reads, Writes]]


def _arity(ins: list[Operand], outs: list[Operand], n_in: int, n_out: int) -> None:
    if len(ins) < n_in or len(outs) < n_out:
        raise _Reject(f"needs {n_in} inputs and {n_out} outputs")


def _full(ins: list[Operand], used: int) -> Reads:
    """Every element of the first ``used`` inputs, nothing of the rest."""
    n = len(ins)
    if n <= used and n <= 2:  # most rules: one or two inputs, every one read whole
        return [ins[0].every, ins[1].every] if n == 2 else [ins[0].every] if n else []
    return [op.every if i < used else EMPTY for i, op in enumerate(ins)]


def _only_first(outs: list[Operand], region: Region) -> Writes:
    if len(outs) == 1:  # most tasks
        return [region]
    return [region, *[EMPTY] * (len(outs) - 1)] if outs else []


def _nop(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return [EMPTY] * len(ins), [EMPTY] * len(outs)


def _elementwise(n_used: int) -> Rule:
    def rule(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
        _arity(ins, outs, n_used, 1)
        shapes = [ins[0].stored, ins[1].stored] if n_used == 2 else [op.stored for op in ins[:n_used]]
        _storable(_broadcast(*shapes), outs[0].stored)
        return _full(ins, n_used), _only_first(outs, outs[0].every)

    return rule


def _mul(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return _elementwise(2 if len(ins) > 1 else 1)(params, ins, outs)


def _allreduce(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    return _elementwise(max(len(ins), 1))(params, ins, outs)


def _copy(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    src, dst = ins[0].stored, outs[0].stored
    if len(src) > len(dst) or _broadcast(src, dst) != dst:
        raise _Reject("COPY does not broadcast")
    return _full(ins, 1), _only_first(outs, outs[0].every)


_SOFTMAX_DIM = int(PARAM_DEFAULTS[InstructionKind.SOFTMAX]["dim"])
"""The axis SOFTMAX normalises along when ``dim`` is absent (spec §7)."""


def _softmax(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    rank = max(len(ins[0].stored), 1)
    if not -rank <= _param(params, "dim", _SOFTMAX_DIM) < rank:
        raise _Reject("SOFTMAX dim out of range")
    return _elementwise(1)(params, ins, outs)


def _argmax(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    shape = ins[0].stored
    if math.prod(shape) == 0:
        raise _Reject("SAMPLE_ARGMAX of empty logits")
    _storable(shape[:-1], outs[0].stored)
    return _full(ins, 1), _only_first(outs, outs[0].every)


def _layernorm(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    x = ins[0].stored
    hidden = _param(params, "hidden", lambda: _dim(x, -1))
    if not x or x[-1] != hidden or ins[1].stored != (hidden,):
        raise _Reject("LAYERNORM shapes")
    if len(ins) > 2 and ins[2].stored != (hidden,):
        raise _Reject("LAYERNORM bias shape")
    _storable(x, outs[0].stored)
    return _full(ins, min(len(ins), 3)), _only_first(outs, outs[0].every)


def _embed(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    ids, table = ins[0].stored, ins[1].stored
    if not table:
        raise _Reject("EMBED table of rank 0")
    n_ids: int = math.prod(ids)
    if n_ids * math.prod(table[1:]) != math.prod(outs[0].stored):
        raise _Reject("EMBED rows do not fill the output")
    rows = ins[1].every  # whole(table)
    if not rows.is_empty and n_ids:
        rows = Region(rows.boxes, exact=False, note="EMBED reads the table rows its ids select at run time")
    reads = [ins[0].every, rows if n_ids else EMPTY, *[EMPTY] * (len(ins) - 2)]
    return reads, _only_first(outs, outs[0].every)


def _kv_append(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    pos = _need(params, "pos")
    cache, new = outs[0].stored, math.prod(ins[0].stored)
    if len(cache) not in (3, 4):
        raise _Reject("KV_APPEND cache rank")
    row = cache[-2] * cache[-1]
    if len(cache) == 4:
        count = 1
        if new != cache[0] * row:
            raise _Reject("KV_APPEND new is not one row per sequence")
    else:
        if row == 0 or new % row:
            raise _Reject("KV_APPEND new is not whole rows")
        count = new // row
    if pos < 0 or pos + count > cache[-3]:
        raise _Reject("KV_APPEND rows outside the cache")
    return _full(ins, 1), _only_first(outs, along(cache, -3, pos, pos + count))


def _rope(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    x, n_pos = ins[0].stored, math.prod(ins[1].stored)
    hd = _need(params, "head_dim")
    if hd <= 0 or hd % 2 or len(x) not in (2, 3) or x[-1] != hd:
        raise _Reject("ROPE shapes")
    slabs = 1 if len(x) == 2 else x[0]
    if n_pos < 1 or (len(x) == 3 and n_pos != slabs):
        raise _Reject("ROPE positions")
    positions = Region(tuple(flat_range(ins[1].stored, 0, slabs)))
    return [ins[0].every, positions, *[EMPTY] * (len(ins) - 2)], _only_first(outs, outs[0].every)


def _attention(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 3, 1)
    q, kc, vc = ins[0].stored, ins[1].stored, ins[2].stored
    hd = _need(params, "head_dim")
    n_heads = _param(params, "n_heads", lambda: q[-2] if len(q) >= 2 else 1)
    n_kv = _param(params, "n_kv_heads", n_heads)
    if n_kv <= 0 or n_heads % n_kv or len(kc) not in (3, 4) or kc[-2] * n_kv == 0 or len(vc) != len(kc):
        raise _Reject("ATTENTION_TILE heads")
    start = _param(params, "kv_start", 0)
    length = _param(params, "kv_len", lambda: kc[-3])
    for cache in (kc, vc):
        if start < 0 or start + max(length, 0) > cache[-3]:
            raise _Reject("attention window outside the cache")
    batched = len(kc) == 4
    lead = (kc[0],) if batched else ()
    if math.prod(q) != math.prod(lead) * n_heads * hd or kc[-1] != hd or vc[-1] != hd:
        raise _Reject("ATTENTION_TILE q does not match the heads")
    if kc[-2] not in (1, n_kv) or vc[-2] not in (1, n_kv) or (batched and kc[0] != vc[0]):
        raise _Reject("ATTENTION_TILE kv heads")
    partial = not batched and _param(params, "flags", 0) & _PARTIAL_WRITE
    result = (n_heads, hd + 2) if partial else (*lead, n_heads, hd)
    _storable(result, outs[0].stored)
    writes = _only_first(outs, outs[0].every)
    if length <= 0:
        return [EMPTY] * len(ins), writes
    window = [along(kc, -3, start, start + length), along(vc, -3, start, start + length)]
    return [ins[0].every, *window, *[EMPTY] * (len(ins) - 3)], writes


def _combine(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 1, 1)
    first = ins[0].stored
    hd = _param(params, "head_dim", lambda: first[-1] - 2 if first else 0)
    if hd <= 0 or math.prod(first) % (hd + 2):
        raise _Reject("ATTENTION_COMBINE partial rows")
    n_heads = _param(params, "n_heads", lambda: math.prod(first) // (hd + 2))
    if any(math.prod(op.stored) != n_heads * (hd + 2) for op in ins):
        raise _Reject("ATTENTION_COMBINE partials")
    _storable((n_heads, hd), outs[0].stored)
    return _full(ins, len(ins)), _only_first(outs, outs[0].every)


def _group_cols(table: Operand, rows: tuple[int, ...], k: int, group: int, pairs: bool = False) -> Region:
    """Columns of a scales/zeros table (viewed ``[*rows, -1]``, or ``[*rows, -1, 2]`` for the
    (scale, offset) ``pairs`` of the affine form) that ``expand_groups`` reads."""
    n_rows, numel, per = math.prod(rows), math.prod(table.stored), 2 if pairs else 1
    if n_rows == 0 or numel % (n_rows * per):
        raise _Reject("scales are not whole rows")
    width = numel // n_rows
    if width == 0 and k > 0:
        raise _Reject("empty scales")
    return row_prefix(table.stored, n_rows, width, per * -(-k // group))


def _affine(params: Mapping[str, Any]) -> bool:
    """Whether ``flags`` selects the affine (scale, offset) table of a quantized operand."""
    return bool(_param(params, "flags", 0) & _AFFINE)


def _dequant(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    _arity(ins, outs, 2, 1)
    q = ins[0].stored
    if not q:
        raise _Reject("DEQUANT q of rank 0")
    rows, out_n = q[:-1], math.prod(outs[0].stored)
    n_rows = math.prod(rows)
    if n_rows == 0 or out_n % n_rows:
        raise _Reject("DEQUANT output is not whole rows of q")
    k = out_n // n_rows
    group = _param(params, "group", k)
    if group <= 0:
        raise _Reject("group must be positive")
    qdtype = _param(params, "qdtype", 0)
    packed = ins[0].uint8 and q[-1] == (k + 1) // 2
    if qdtype == _I4 and packed:
        q_read = ins[0].every
    else:
        if q[-1] < k:
            raise _Reject("q holds fewer than K columns")
        q_read = along(q, -1, 0, k)
    affine = _affine(params)
    if affine and len(ins) > 2:
        raise _Reject("an affine table takes no zeros")
    reads = [q_read, _group_cols(ins[1], rows, k, group, affine)]
    if len(ins) > 2:
        reads.append(_group_cols(ins[2], rows, k, group))
    reads += [EMPTY] * (len(ins) - len(reads))
    return reads, _only_first(outs, outs[0].every)


def _tile_rows(op: Operand, n_off: int, n_tile: int, what: str, rank: int = 2) -> Region:
    """Rows ``[n_off, n_off+n_tile)`` of a weight-like operand of ``rank`` dims, all the rest."""
    if len(op.stored) != rank or n_off < 0 or n_off + n_tile > op.stored[0] or n_tile < 0:
        raise _Reject(f"tile rows outside {what}")
    return along(op.stored, 0, n_off, n_off + n_tile)


def _linear(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    """GEMV_TILE and GEMM_TILE: ``x @ W[n_off:n_off+N_tile].T`` for every row of x (spec §7)."""
    _arity(ins, outs, 2, 1)
    x, out = ins[0].stored, outs[0].stored
    n_off = _param(params, "n_off", 0)
    k_x = _dim(x, -1)
    qdtype = _param(params, "qdtype", 0)
    if qdtype in _QUANTIZED and len(ins) >= 3:
        n_tile = _param(params, "N_tile", lambda: _dim(ins[2].stored, 0))
        k = _param(params, "K", k_x)
        group = _param(params, "group", k)
        if group <= 0 or k != k_x:
            raise _Reject("quantized tile K")
        qw, affine = ins[1].stored, _affine(params)
        tables_in = ins[2:4]
        if affine and (len(ins) > 3 or len(ins[2].stored) != 3 or ins[2].stored[-1] != 2):
            raise _Reject("an affine table is [N, n_groups, 2] and takes no zeros")
        if len(qw) != 2 or (not affine and any(len(op.stored) != 2 for op in tables_in)):
            raise _Reject("quantized operands are not 2-D")
        q_cols = -(-k // 2) if qdtype == _I4 else k
        if (qw[-1] * 2 if qdtype == _I4 else qw[-1]) < k:
            raise _Reject("quantized W holds fewer than K columns")
        rank = 3 if affine else 2
        tables = [_tile_rows(op, n_off, n_tile, "scales", rank) for op in tables_in]
        groups = [_group_cols(op, (op.stored[0],), k, group, affine) for op in tables_in]
        reads = [
            ins[0].every,
            intersect(_tile_rows(ins[1], n_off, n_tile, "W"), along(qw, -1, 0, q_cols)),
            *(intersect(t, g) for t, g in zip(tables, groups, strict=True)),
        ]
    else:
        n_tile = _param(params, "N_tile", lambda: _dim(ins[1].stored, 0))
        w = _tile_rows(ins[1], n_off, n_tile, "W")
        if ins[1].stored[1] != k_x:
            raise _Reject("x does not match W")
        reads = [ins[0].every, w]
        if len(ins) > 2:
            bias = ins[2].stored
            if len(bias) != 1 or n_off + n_tile > bias[0]:
                raise _Reject("bias shape")
            reads.append(along(bias, 0, n_off, n_off + n_tile))
    if n_off < 0 or n_off + n_tile > _dim(out, -1):
        raise _Reject("tile columns outside the output")
    if x[:-1] != out[:-1]:  # equal shapes are storable
        _storable((*x[:-1], n_tile), (*out[:-1], n_tile))
    if len(ins) > len(reads):
        reads += [EMPTY] * (len(ins) - len(reads))
    return reads, _only_first(outs, along(out, -1, n_off, n_off + n_tile))


_RULES: dict[InstructionKind, Rule] = {
    InstructionKind.NOP: _nop,
    InstructionKind.COPY: _copy,
    InstructionKind.EMBED: _embed,
    InstructionKind.KV_APPEND: _kv_append,
    InstructionKind.RMSNORM: _elementwise(2),
    InstructionKind.LAYERNORM: _layernorm,
    InstructionKind.GEMV_TILE: _linear,
    InstructionKind.GEMM_TILE: _linear,
    InstructionKind.ATTENTION_TILE: _attention,
    InstructionKind.ATTENTION_COMBINE: _combine,
    InstructionKind.ROPE: _rope,
    InstructionKind.SILU_MUL: _elementwise(2),
    InstructionKind.GELU: _elementwise(1),
    InstructionKind.ADD: _elementwise(2),
    InstructionKind.MUL: _mul,
    InstructionKind.SOFTMAX: _softmax,
    InstructionKind.ALLREDUCE_SHARD: _allreduce,
    InstructionKind.SAMPLE_ARGMAX: _argmax,
    InstructionKind.DEQUANT: _dequant,
}


# -- FUSED -----------------------------------------------------------------------------------

Taint = dict[int, Region]
"""Task input position → the region of it that flowed into a value."""


def _merge(a: Taint, b: Taint) -> Taint:
    out = dict(a)
    for k, region in b.items():
        out[k] = union([out[k], region]) if k in out else region
    return out


def _opcode(value: Any) -> InstructionKind:
    try:
        return opcode_of(value)
    except ValueError as exc:
        raise _Reject(str(exc)) from exc


def _step_ref(ref: Any, n_inputs: int, scratch: Mapping[int, Operand]) -> tuple[str, int]:
    if isinstance(ref, Mapping) and len(ref) == 1:
        ((key, idx),) = ref.items()
        if key == "in" and type(idx) is int and 0 <= idx < n_inputs:
            return key, idx
        if key == "s" and type(idx) is int and idx in scratch:
            return key, idx
    raise _Reject(f"bad recipe arg {ref!r}")


def _step_out(value: Any) -> int:
    if value == "final" or (type(value) is int and value >= -1):
        return -1 if value == "final" else value
    raise _Reject(f"bad recipe out {value!r}")


def _new_scratch(step: Mapping[str, Any], args: list[Operand]) -> Operand:
    shape = step.get("out_shape")
    if shape is None:
        if not args:
            raise _Reject("a scratch without out_shape needs an argument")
        return Operand.scratch(args[0].stored, args[0].uint8 and "out_dtype" not in step)
    if not isinstance(shape, (list, tuple)):
        raise _Reject("bad out_shape")
    dims = tuple(_int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise _Reject("bad out_shape")
    uint8 = "out_dtype" not in step and bool(args) and args[0].uint8
    return Operand.scratch(dims, uint8)


def _fused(params: Mapping[str, Any], ins: list[Operand], outs: list[Operand]) -> tuple[Reads, Writes]:
    """FUSED: each step's footprint, with task inputs traced through scratch (spec §7)."""
    _arity(ins, outs, 1, 1)
    recipe = params.get("recipe") if "recipe" in params else None
    steps = recipe.get("steps") if isinstance(recipe, Mapping) else None
    if not isinstance(steps, list) or not steps:
        raise _Reject("FUSED needs a recipe with steps")
    scratch: dict[int, Operand] = {}
    taint: dict[int, Taint] = {}
    finals: list[tuple[Region, Taint]] = []
    exact = True
    for step in steps:
        if not isinstance(step, Mapping) or not isinstance(step.get("params", {}), Mapping):
            raise _Reject("a recipe step must be an object with object params")
        op = _opcode(step.get("op"))
        if op is InstructionKind.FUSED:
            raise _Reject("nested FUSED")
        out_dtype = step.get("out_dtype", "float32")
        if not isinstance(out_dtype, str) or out_dtype not in RECIPE_DTYPES:
            raise _Reject("bad out_dtype")
        raw_args = step.get("args", [])
        if not isinstance(raw_args, list):
            raise _Reject("args must be a list")
        refs = [_step_ref(r, len(ins), scratch) for r in raw_args]
        args = [ins[i] if key == "in" else scratch[i] for key, i in refs]
        out = _step_out(step.get("out", "final"))
        target = outs[0] if out == -1 else scratch.get(out) or _new_scratch(step, args)
        reads, writes = _RULES[op](step.get("params", {}), args, [target])
        if all(w.is_empty for w in writes):
            reads = [EMPTY] * len(reads)
        flow: Taint = {}
        for (key, i), region, arg in zip(refs, reads, args, strict=True):
            if region.is_empty:
                continue
            if key == "in":
                flow = _merge(flow, {i: region})
            else:
                exact = exact and region == whole(arg.stored)
                flow = _merge(flow, taint.get(i, {}))
        if out == -1:
            finals.append((writes[0], flow))
        else:
            overwritten = writes[0] == whole(target.stored)
            taint[out] = flow if overwritten else _merge(taint.get(out, {}), flow)
            scratch[out] = target
    if not finals:
        raise _Reject("no step writes 'final'")
    live: Taint = {}
    later: list[Region] = []
    for written, flow in reversed(finals):
        if written.boxes is None or uncovered(written, later, outs[0].stored):
            live = _merge(live, flow)
        later.append(written)
    note = "" if exact else "a FUSED step reads part of a scratch: its inputs are traced whole"
    read_list = [
        Region(live[i].boxes, exact=exact and live[i].exact, note=note) if i in live else EMPTY
        for i in range(len(ins))
    ]
    return read_list, _only_first(outs, union([w for w, _ in finals]))


_RULES[InstructionKind.FUSED] = _fused


def op_footprint(
    op: InstructionKind, params: Mapping[str, Any], ins: Sequence[Operand], outs: Sequence[Operand]
) -> tuple[list[Region], list[Region]]:
    """Read region per input position and write region per output position, in **stored**
    coordinates; on parameters or shapes the semantics reject, every operand whole (inexact)."""
    try:
        reads, writes = _RULES[op](
            params, ins if type(ins) is list else list(ins), outs if type(outs) is list else list(outs)
        )
    except (_Reject, ArithmeticError, IndexError) as exc:
        why = str(exc) or type(exc).__name__
        note = f"{op.name}: the semantics reject this task ({why})"
        return (
            [Region(whole(o.stored).boxes, exact=False, note=note) for o in ins],
            [Region(whole(o.stored).boxes, exact=False, note=note) for o in outs],
        )
    for w in writes:  # a loop, not a generator: this runs once per distinct task
        if w.boxes is None or w.boxes:  # not w.is_empty
            return reads, writes
    return [EMPTY] * len(reads), writes
