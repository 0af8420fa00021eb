"""Hypothesis strategies for property tests of AMK tools (public API; needs ``hypothesis``).

Use them in your own test suite to check an importer, validator or VM against amkspec::

    from hypothesis import given
    from amkspec.programs.strategies import valid_programs, arbitrary_programs, mutated_documents

    @given(valid_programs(max_tasks=20, assign_sms=True, allocate_pages=True))
    def test_my_validator_accepts(prog):
        assert my_validate(amkspec.dumps(prog)).ok

    @given(mutated_documents())
    def test_my_loader_never_crashes(doc):
        my_load(json.dumps(doc))      # must fail cleanly, never crash

* :func:`valid_programs`: valid by construction (spec §3), with every opcode: every wait is an
  all-join on a counter whose producers all come earlier in the task list, tiled GEMV and GEMM
  writers share one counter with disjoint column tiles (a GEMM tile writes every row),
  KV appends precede the attention that reads the cache,
  and every shape satisfies the opcode semantics of spec §7, so the programs also run on the
  ReferenceVM.
* :func:`arbitrary_programs`: representable but possibly broken programs (dangling ids, ids
  that are not list positions, zero/negative/huge thresholds, cycles, bools, NaN and strings
  in params, empty programs): what a validator must judge without crashing.
* :func:`json_documents` / :func:`mutated_documents`: JSON data for loaders; mutated documents
  are valid documents with random edits and may not be programs at all.

Sizes are small by default so that each example takes milliseconds.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st

from amkspec.ir import (
    PARAM_FIELDS,
    TARGETS,
    AttentionFlags,
    Buffer,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
    QuantFlags,
    ScheduleConfig,
    Task,
    Wait,
    to_dict,
)
from amkspec.ir.graph import dependency_edges

Op = InstructionKind
Kind = BufferKind
Draw = Callable[[st.SearchStrategy[Any]], Any]

FLOAT_DTYPES = (DType.F32, DType.F16, DType.BF16)
WIDTHS = (4, 8, 16)
"""Vector widths of generated activations (all even, so RoPE applies to any of them)."""


@attrs.define
class _Value:
    """An activation ``[1, width]`` in the pool, and the waits that make it readable."""

    buf: int
    width: int
    waits: list[Wait]


class _ValidBuilder:
    """Grows a valid program block by block; each block reads pool values and adds one."""

    def __init__(self, draw: Draw, dtype: DType, max_tasks: int) -> None:
        self.draw, self.dtype, self.budget = draw, dtype, max_tasks
        self.b = ProgramBuilder()
        self.pool: list[_Value] = []
        self.externals: dict[str, int] = {}

    # -- helpers --------------------------------------------------------------------------
    def index_input(self, name: str) -> int:
        """A shared ``[1]`` I32 IO_INPUT (token ids, positions, reshape row ids)."""
        if name not in self.externals:
            self.externals[name] = self.b.new_buffer(name, Kind.IO_INPUT, DType.I32, (1,))
        return self.externals[name]

    def act(self, name: str, shape: tuple[int, ...]) -> int:
        space = self.draw(st.sampled_from((MemSpace.HBM, MemSpace.GLOBAL_SCRATCH)))
        return self.b.new_buffer(f"{name}{len(self.b.buffers)}", Kind.ACTIVATION, self.dtype, shape, space)

    def weight(self, name: str, shape: tuple[int, ...]) -> int:
        return self.b.new_buffer(f"{name}{len(self.b.buffers)}.weight", Kind.WEIGHT, self.dtype, shape)

    def pick(self, width: int | None = None) -> _Value | None:
        options = [v for v in self.pool if width is None or v.width == width]
        return self.draw(st.sampled_from(options)) if options else None

    def waits(self, *values: _Value) -> list[Wait]:
        """All-join waits for the inputs, plus sometimes an extra ordering wait (spec §3.3)."""
        out: dict[int, Wait] = {}
        for v in values:
            out.update((w.counter, w) for w in v.waits)
        if self.b.tasks and self.draw(st.booleans()):
            extra = self.b.tasks[self.draw(st.integers(0, len(self.b.tasks) - 1))].out_counter
            out.setdefault(extra, self.b.join(extra))
        return list(out.values())

    def single(self, op: InstructionKind, ins: list[int], out: int, waits: list[Wait],
               params: dict[str, Any] | None = None, label: str = "") -> list[Wait]:
        t = self.b.add_task(op, ins, [out], waits=waits, params=params, label=label or op.name.lower())
        self.budget -= 1
        return [self.b.after(t)]

    # -- blocks ---------------------------------------------------------------------------
    def source(self) -> None:
        width = self.draw(st.sampled_from(WIDTHS))
        if self.draw(st.booleans()):
            buf = self.b.new_buffer(f"x{len(self.b.buffers)}", Kind.IO_INPUT, self.dtype, (1, width))
            self.pool.append(_Value(buf, width, []))
            return
        ids = self.index_input("token_id")
        out = self.act("emb", (1, width))
        table = self.weight("embed", (self.draw(st.integers(1, 8)), width))
        waits = self.waits()
        done = self.single(Op.EMBED, [ids, table], out, waits, {"hidden": width})
        self.pool.append(_Value(out, width, done))

    def gemv(self, x: _Value | None = None, n: int | None = None, tile: int | None = None) -> _Value | None:
        """Column tiles of ``x @ W.T`` sharing one counter; readers wait for all of them."""
        x = x or self.pick()
        n = n or self.draw(st.sampled_from(WIDTHS))
        tile = tile or self.draw(st.sampled_from([t for t in (2, 4, 8, 16) if t <= n]))
        n_tiles = math.ceil(n / tile)
        if x is None or n_tiles > self.budget:
            return None
        out = self.act("gemv", (1, n))
        w = self.weight("proj", (n, x.width))
        c = self.b.new_counter(f"gemv ({n_tiles} tiles)")
        waits = self.waits(x)
        for i in range(n_tiles):
            self.b.add_task(Op.GEMV_TILE, [x.buf, w], [out], out_counter=c, waits=waits,
                            params={"K": x.width, "N_tile": min(tile, n - i * tile), "n_off": i * tile},
                            label=f"gemv[t{i}]")
        self.budget -= n_tiles
        return _Value(out, n, [self.b.join(c)])

    def unary(self) -> _Value | None:
        x = self.pick()
        if x is None:
            return None
        op = self.draw(st.sampled_from((Op.RMSNORM, Op.COPY, Op.ROPE)))
        out = self.act(op.name.lower(), (1, x.width))
        waits = self.waits(x)
        if op is Op.RMSNORM:
            w = self.weight("norm", (x.width,))
            done = self.single(op, [x.buf, w], out, waits, {"eps": 1e-6, "hidden": x.width})
        elif op is Op.ROPE:
            pos = self.index_input("pos")
            done = self.single(op, [x.buf, pos], out, waits, {"head_dim": x.width, "theta": 10000.0})
        else:
            done = self.single(op, [x.buf], out, waits)
        return _Value(out, x.width, done)

    def binary(self) -> _Value | None:
        a = self.pick()
        b = self.pick(a.width) if a is not None else None
        if a is None or b is None:
            return None
        op = self.draw(st.sampled_from((Op.ADD, Op.SILU_MUL)))
        out = self.act(op.name.lower(), (1, a.width))
        return _Value(out, a.width, self.single(op, [a.buf, b.buf], out, self.waits(a, b)))

    def attention(self) -> _Value | None:
        """q/k/v projections → reshape q into heads → KV appends → GQA attention (7 tasks), or
        split-KV attention: partial tiles (``flags`` PARTIAL_WRITE) merged by ATTENTION_COMBINE."""
        x = self.pick()
        if x is None or self.budget < 7:
            return None
        hd = self.draw(st.sampled_from((2, 4, 8)))
        n_kv = self.draw(st.integers(1, 2))
        n_heads = n_kv * self.draw(st.integers(1, 2))
        max_seq = self.draw(st.integers(1, 8))
        pos = self.draw(st.integers(0, max_seq - 1))
        kv_start = self.draw(st.integers(0, pos))
        kv_len = pos + 1 - kv_start
        n_parts = self.draw(st.integers(1, max(1, min(3, kv_len, self.budget - 7))))
        q, k, v = (self.gemv(x, n, tile=n) for n in (n_heads * hd, n_kv * hd, n_kv * hd))
        assert q is not None and k is not None and v is not None  # budget was checked
        heads = self.act("q.heads", (n_heads, hd))
        rid = self.index_input("reshape_id0")
        heads_done = self.single(Op.EMBED, [rid, q.buf], heads, self.waits(q), {"hidden": hd})
        appended: list[Wait] = []
        caches: list[int] = []
        for name, new in (("kcache", k), ("vcache", v)):
            cache = self.b.new_buffer(f"{name}{len(self.b.buffers)}", Kind.KV_CACHE, self.dtype,
                                      (max_seq, n_kv, hd))
            appended += self.single(Op.KV_APPEND, [new.buf, cache], cache, self.waits(new), {"pos": pos})
            caches.append(cache)
        out = self.act("attn", (1, n_heads * hd))
        heads_params = {"head_dim": hd, "n_heads": n_heads, "n_kv_heads": n_kv}
        params = {**heads_params, "kv_start": kv_start, "kv_len": kv_len, "scale": hd**-0.5}
        waits = [*heads_done, *appended]
        if n_parts == 1:
            done = self.single(Op.ATTENTION_TILE, [heads, *caches], out, waits, params)
            return _Value(out, n_heads * hd, done)
        size = math.ceil(kv_len / n_parts)
        parts: list[int] = []
        parts_done: list[Wait] = []
        for start in range(0, kv_len, size):
            part = self.act("attn.part", (n_heads, hd + 2))
            window = {"kv_start": kv_start + start, "kv_len": min(size, kv_len - start),
                      "flags": int(AttentionFlags.PARTIAL_WRITE)}
            parts_done += self.single(Op.ATTENTION_TILE, [heads, *caches], part, waits, {**params, **window})
            parts.append(part)
        done = self.single(Op.ATTENTION_COMBINE, parts, out, parts_done, heads_params)
        return _Value(out, n_heads * hd, done)

    def elementwise(self) -> _Value | None:
        """GELU, SOFTMAX, MUL by a scale or LAYERNORM of one value; MUL or ALLREDUCE_SHARD of several."""
        x = self.pick()
        if x is None:
            return None
        op = self.draw(st.sampled_from((Op.GELU, Op.SOFTMAX, Op.MUL, Op.LAYERNORM, Op.ALLREDUCE_SHARD)))
        out = self.act(op.name.lower(), (1, x.width))
        values = [x]
        if op is Op.ALLREDUCE_SHARD or (op is Op.MUL and self.draw(st.booleans())):
            extra = [self.pick(x.width) for _ in range(self.draw(st.integers(1, 1 if op is Op.MUL else 2)))]
            values += [v for v in extra if v is not None]
        params: dict[str, Any] = {}
        ins = [v.buf for v in values]
        if op is Op.MUL and len(ins) == 1:
            params["scale"] = 0.5
        elif op is Op.LAYERNORM:
            ins.append(self.weight("ln", (x.width,)))
            if self.draw(st.booleans()):
                ins.append(self.weight("ln.b", (x.width,)))
            params = {"eps": 1e-5, "hidden": x.width}
        return _Value(out, x.width, self.single(op, ins, out, self.waits(*values), params))

    def dequant(self) -> _Value | None:
        """A weight-only quantized row dequantized into an activation (I8 levels, F16 scales, or with
        the affine extension (scale, offset) pairs)."""
        width = self.draw(st.sampled_from(WIDTHS))
        group = self.draw(st.sampled_from([g for g in (2, 4, 8) if g <= width]))
        q = self.b.new_buffer(f"q{len(self.b.buffers)}", Kind.WEIGHT, DType.I8, (1, width))
        affine = self.draw(st.booleans())
        groups = (1, math.ceil(width / group), *((2,) if affine else ()))
        scales = self.b.new_buffer(f"s{len(self.b.buffers)}", Kind.WEIGHT, DType.F16, groups)
        out = self.act("dequant", (1, width))
        params = {"qdtype": int(DType.I8), "group": group}
        if affine:
            params["flags"] = int(QuantFlags.AFFINE)
        return _Value(out, width, self.single(Op.DEQUANT, [q, scales], out, self.waits(), params))

    def fused(self) -> _Value | None:
        """A FUSED recipe: RMSNORM into a scratch, then a scaled copy into the output."""
        x = self.pick()
        if x is None:
            return None
        w = self.weight("fnorm", (x.width,))
        out = self.act("fused", (1, x.width))
        steps = [
            {"op": int(Op.RMSNORM), "args": [{"in": 0}, {"in": 1}], "out": 0, "out_shape": [1, x.width],
             "out_dtype": "float32", "params": {"eps": 1e-6, "hidden": x.width}},
            {"op": int(Op.MUL), "args": [{"s": 0}], "out": "final", "params": {"scale": 2.0}},
        ]
        params = {"recipe": {"steps": steps}}
        return _Value(out, x.width, self.single(Op.FUSED, [x.buf, w], out, self.waits(x), params))

    def gemm(self) -> _Value | None:
        """A batch of rows: GEMM column tiles (every row, ``M_tile = M``) then greedy sampling."""
        rows, k = self.draw(st.integers(1, 4)), self.draw(st.sampled_from(WIDTHS))
        n = self.draw(st.sampled_from(WIDTHS))
        tile = self.draw(st.sampled_from([t for t in (2, 4, 8, 16) if t <= n]))
        n_tiles = math.ceil(n / tile)
        if n_tiles + 1 > self.budget:
            return None
        x = self.b.new_buffer(f"xb{len(self.b.buffers)}", Kind.IO_INPUT, self.dtype, (rows, k))
        w = self.weight("gemm", (n, k))
        logits = self.act("logits", (rows, n))
        c = self.b.new_counter(f"gemm ({n_tiles} tiles)")
        waits = self.waits()
        for i in range(n_tiles):
            params = {"K": k, "N_tile": min(tile, n - i * tile), "n_off": i * tile, "M_tile": rows,
                      "m_off": 0}
            self.b.add_task(Op.GEMM_TILE, [x, w], [logits], out_counter=c, waits=waits, params=params,
                            label=f"gemm[t{i}]")
        self.budget -= n_tiles
        tokens = self.b.new_buffer(f"tokens{len(self.b.buffers)}", Kind.IO_OUTPUT, DType.I32, (rows,))
        self.single(Op.SAMPLE_ARGMAX, [logits], tokens, [self.b.join(c)])
        return None

    def nop(self) -> _Value | None:
        """A NOP that waits on an earlier task (a pure synchronisation point)."""
        self.b.add_task(Op.NOP, [], [], waits=self.waits(), label="nop")
        self.budget -= 1
        return None

    def finish(self) -> None:
        """Copy the newest value into an IO_OUTPUT so that every output is produced."""
        last = self.pool[-1]
        out = self.b.new_buffer("out", Kind.IO_OUTPUT, self.dtype, (1, last.width))
        self.single(Op.COPY, [last.buf], out, list(last.waits), label="output")


def _blocks(vb: _ValidBuilder) -> dict[str, Callable[[], _Value | None]]:
    return {
        "gemv": vb.gemv, "unary": vb.unary, "binary": vb.binary, "attention": vb.attention,
        "elementwise": vb.elementwise, "dequant": vb.dequant, "fused": vb.fused, "gemm": vb.gemm,
        "nop": vb.nop,
    }


@st.composite
def valid_programs(
    draw: Draw,
    max_tasks: int = 16,
    *,
    assign_sms: bool | None = None,
    allocate_pages: bool | None = None,
    with_target: bool | None = None,
    permute_ids: bool = False,
) -> MegakernelProgram:
    """Programs that are valid by construction (spec §3) with sound shapes (spec §7).

    ``max_tasks`` bounds the task count (the smallest program is one COPY to the output).
    ``assign_sms`` sets every ``Task.sm`` (queues in task-list order are then linear
    extensions of the DAG, spec §3.2); ``allocate_pages`` binds activations to pages, sharing a
    page only between buffers whose uses are ordered (spec §1.6); ``with_target`` attaches a
    built-in GpuTarget (forced when SMs are assigned). None lets hypothesis choose.

    Ids are list positions, as the ABI tables of spec §8 require. ``permute_ids=True`` renames
    buffers, counters and tasks (list order kept, every reference follows) so that ids are not
    positions: the program stays sound in every other respect, which tests id-based lookups,
    but :func:`amkspec.validate` rejects it for that one reason (code S102).
    """
    vb = _ValidBuilder(draw, draw(st.sampled_from(FLOAT_DTYPES)), max(2, max_tasks) - 1)
    vb.source()
    blocks = _blocks(vb)
    while vb.budget > 0:
        name = draw(st.sampled_from(("source", *blocks, "stop")))
        if name == "stop":
            break
        if name == "source":
            vb.source()
            continue
        value = blocks[name]()
        if value is not None:
            vb.pool.append(value)
    vb.finish()
    if assign_sms is None:
        assign_sms = draw(st.booleans())
    if with_target is None:
        with_target = draw(st.booleans())
    target = draw(st.sampled_from(sorted(TARGETS))) if with_target or assign_sms else None
    gpu = TARGETS[target] if target is not None else None
    if assign_sms:
        assert gpu is not None
        sms = min(gpu.num_sms, 4)
        for task in vb.b.tasks:
            task.sm = draw(st.integers(0, sms - 1))
    prog = vb.b.build(meta={"model": "amkspec.programs.strategies.valid_programs"}, target=gpu,
                      config=ScheduleConfig() if draw(st.booleans()) else None)
    if allocate_pages if allocate_pages is not None else draw(st.booleans()):
        prog.pages = _allocate_pages(draw, prog)
    if permute_ids:
        _permute_ids(draw, prog)
    return prog


def _ancestors(prog: MegakernelProgram) -> dict[int, set[int]]:
    """Task id → ids of its transitive predecessors (the program is in topological list order)."""
    preds: dict[int, list[int]] = {t.id: [] for t in prog.tasks}
    for a, b in dependency_edges(prog):
        preds[b].append(a)
    anc: dict[int, set[int]] = {}
    for task in prog.tasks:
        anc[task.id] = set().union(*([{p} | anc[p] for p in preds[task.id]] or [set()]))
    return anc


def _allocate_pages(draw: Draw, prog: MegakernelProgram) -> PageAllocation:
    """First-fit pages: ``b`` may join a page when every use of every occupant happens before
    every writer of ``b`` (the page-reuse rule, spec §1.6)."""
    anc = _ancestors(prog)
    uses: dict[int, set[int]] = {}
    writers: dict[int, set[int]] = {}
    for task in prog.tasks:
        for used in task.inputs + task.outputs:
            uses.setdefault(used, set()).add(task.id)
        for written in task.outputs:
            writers.setdefault(written, set()).add(task.id)
    position = {t.id: i for i, t in enumerate(prog.tasks)}
    pages: list[list[Buffer]] = []
    for buf in (b for b in prog.buffers if b.kind is Kind.ACTIVATION):
        def before(a: Buffer, buf: Buffer = buf) -> bool:
            return all(u in anc[w] for u in uses.get(a.id, ()) for w in writers.get(buf.id, ()))

        fits = [p for p in pages if p[0].space is buf.space and all(before(a) for a in p)]
        if fits and draw(st.booleans()):
            draw(st.sampled_from(fits)).append(buf)
        else:
            pages.append([buf])
    mapping: dict[int, int] = {}
    records: list[Page] = []
    for pid, occupants in enumerate(pages):
        spots = [position[u] for b in occupants for u in uses.get(b.id, ())] or [-1]
        records.append(Page(pid, occupants[0].space, max(b.nbytes for b in occupants),
                            min(spots), max(spots)))
        mapping.update((b.id, pid) for b in occupants)
    return PageAllocation(dict(sorted(mapping.items())), records)


def _permute_ids(draw: Draw, prog: MegakernelProgram) -> None:
    """Rename ids by random permutations (list order kept); references follow the renaming."""
    def perm(n: int) -> dict[int, int]:
        new = draw(st.permutations(range(n)))
        return {old: 10 * x + 3 for old, x in enumerate(new)}

    bmap, cmap, tmap = perm(len(prog.buffers)), perm(len(prog.counters)), perm(len(prog.tasks))
    for b in prog.buffers:
        b.id = bmap[b.id]
    for c in prog.counters:
        c.id = cmap[c.id]
    for t in prog.tasks:
        t.id = tmap[t.id]
        t.inputs = [bmap[x] for x in t.inputs]
        t.outputs = [bmap[x] for x in t.outputs]
        t.out_counter = cmap[t.out_counter]
        t.waits = [Wait(cmap[w.counter], w.threshold) for w in t.waits]
    if prog.pages is not None:
        prog.pages.buffer_to_page = {bmap[k]: v for k, v in prog.pages.buffer_to_page.items()}


# -- arbitrary (possibly broken) programs ------------------------------------------------------

_SMALL_IDS = st.integers(-2, 12)
_THRESHOLDS = st.one_of(st.integers(-3, 6), st.sampled_from((0, 2**31 - 1, 2**32, 2**63)))
_JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.text(max_size=6)
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
"""Any JSON value (NaN and infinities included, as Python's json module writes them)."""

_PARAM_VALUES = st.one_of(
    st.integers(-5, 70), st.sampled_from((2**31, -(2**31) - 1, 2**40)), st.booleans(),
    st.floats(allow_nan=True), st.sampled_from((math.nan, math.inf, -0.0)), st.text(max_size=3), st.none(),
)


_BUFFERS = st.lists(st.builds(
    Buffer,
    id=_SMALL_IDS,
    name=st.text(max_size=4),
    kind=st.sampled_from(BufferKind),
    dtype=st.sampled_from(DType),
    shape=st.lists(st.integers(-1, 9), max_size=6).map(tuple),
    space=st.sampled_from(MemSpace),
    source=st.none() | st.text(max_size=4),
))
_TASKS = st.lists(st.builds(
    Task,
    id=_SMALL_IDS,
    op=st.sampled_from(InstructionKind),
    inputs=st.lists(_SMALL_IDS, max_size=9),
    outputs=st.lists(_SMALL_IDS, max_size=5),
    out_counter=_SMALL_IDS,
    waits=st.lists(st.builds(Wait, counter=_SMALL_IDS, threshold=_THRESHOLDS), max_size=9),
    params=st.dictionaries(st.sampled_from(sorted(PARAM_FIELDS)) | st.text(max_size=4), _PARAM_VALUES,
                           max_size=5),
    sm=st.none() | st.integers(-2, 200),
    est_bytes=st.integers(0, 1000),
    est_flops=st.integers(0, 1000),
    label=st.text(max_size=6),
))
_COUNTERS = st.lists(st.builds(Counter, id=_SMALL_IDS, init=st.integers(-1, 2), note=st.text(max_size=4)))
_PAGES = st.none() | st.builds(
    PageAllocation,
    buffer_to_page=st.dictionaries(_SMALL_IDS, _SMALL_IDS, max_size=4),
    pages=st.lists(st.builds(Page, id=_SMALL_IDS, space=st.sampled_from(MemSpace),
                             nbytes=st.integers(-4, 4096), live_start=_SMALL_IDS, live_end=_SMALL_IDS),
                   max_size=3),
)
_TARGET_NAMES = st.none() | st.sampled_from(sorted(TARGETS))
_META = st.dictionaries(st.text(max_size=5), _JSON_SCALARS, max_size=3)


def _number_by_position(records: list[Any]) -> None:
    for i, record in enumerate(records):
        record.id = i


@st.composite
def arbitrary_programs(draw: Draw, max_tasks: int = 12, max_buffers: int = 12) -> MegakernelProgram:
    """Representable programs with no validity guarantee (spec §1: loading does not judge).

    Ids may dangle or differ from list positions, thresholds may be zero, negative or huge,
    waits may form cycles, params may hold bools, NaN, strings or unknown keys; empty programs
    are included. Every result serialises with :func:`amkspec.dumps`, and loading that text
    gives a program that serialises to the same text.
    """
    buffers: list[Buffer] = draw(_BUFFERS.map(lambda bs: bs[:max_buffers]))
    tasks: list[Task] = draw(_TASKS.map(lambda ts: ts[:max_tasks]))
    counters: list[Counter] = draw(_COUNTERS.map(lambda cs: cs[:max_tasks]))
    if draw(st.booleans()):  # most real programs number records by list position
        for records in (buffers, tasks, counters):
            _number_by_position(records)
    name = draw(_TARGET_NAMES)
    return MegakernelProgram(
        meta=draw(_META),
        target=TARGETS[name] if name is not None else None,
        buffers=buffers,
        counters=counters,
        tasks=tasks,
        pages=draw(_PAGES),
        config=draw(st.none() | st.builds(ScheduleConfig)),
    )


# -- JSON documents ----------------------------------------------------------------------------

def json_documents(max_tasks: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """Program documents as parsed JSON (valid and broken programs), ready for ``json.dumps``."""
    return st.one_of(valid_programs(max_tasks), arbitrary_programs(max_tasks)).map(to_dict)


_TRICKY = st.sampled_from(("GEMV_TILE", "NOT_AN_ENUM", "7", "0.2.0", "9.0", "1.0"))
"""Strings that look right in the wrong place: enum names, numbers as text, versions."""


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``doc`` (the root is the empty path)."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, (*prefix, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    """A copy of ``doc`` with the value at ``path`` replaced, wrapped, or its key deleted."""
    if not path:
        return value if how == "replace" else [doc]
    doc = copy.deepcopy(doc)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "wrap":
        parent[last] = [parent[last]]
    elif how == "unknown-key" and isinstance(parent[last], dict):
        parent[last]["x_unknown"] = value
    else:
        parent[last] = value
    return doc


@st.composite
def mutated_documents(draw: Draw, max_tasks: int = 8, max_edits: int = 3) -> Any:
    """A valid or broken program document with 1..``max_edits`` random edits.

    Edits replace a value with random JSON (wrong types, NaN, huge numbers, unknown enum
    names), delete a key or list item, wrap a value in a list, or add an unknown key. The
    result may be any JSON value; a loader must turn it into a program or a clean error.
    """
    doc: Any = draw(json_documents(max_tasks))
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(("replace", "replace", "delete", "wrap", "unknown-key")))
        if how == "delete" and not path:
            how = "replace"
        value = draw(st.one_of(JSON_VALUES, _TRICKY, st.integers(-(2**70), 2**70)))
        doc = _mutate(doc, path, how, value)
    return doc


# Synchronisation-heavy programs for the SMT cross-checks (amkspec.smt.crosscheck): shapes are always
# sound (every buffer is F32 [1, 16]), so what varies is exactly what the execution model cares about:
# out_counters shared or not, waits and thresholds (sometimes partial, too high or cyclic), SM
# queues, which tasks read and write which activations, GEMV column tiles and pages.


@st.composite
def sync_programs(draw: Any, max_tasks: int = 6, pages: bool = True) -> MegakernelProgram:
    """A program of COPY/ADD/GEMV_TILE tasks on F32 ``[1, 16]`` buffers with shared counters, waits,
    SM queues and (``pages``) a shared page: often racy or stuck, always well-shaped."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16))
    acts = [
        b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, 16))
        for i in range(draw(st.integers(1, 3)))
    ]
    n = draw(st.integers(1, max_tasks))
    tasks: list[Task] = []
    for i in range(n):
        op = draw(st.sampled_from((InstructionKind.COPY, InstructionKind.ADD, InstructionKind.GEMV_TILE)))
        src = st.sampled_from([x, *acts])
        out = draw(st.sampled_from(acts))
        if tasks and draw(st.integers(0, 3)) == 0:
            counter = draw(st.sampled_from(tasks)).out_counter
        else:
            counter = b.new_counter(f"t{i}")
        params: dict[str, Any] = {}
        if op is InstructionKind.COPY:
            ins = [draw(src)]
        elif op is InstructionKind.ADD:
            ins = [draw(src), draw(src)]
        else:
            ins = [draw(src), w]
            params = {"K": 16, "N_tile": 8, "n_off": draw(st.sampled_from((0, 8)))}
        tasks.append(Task(i, op, ins, [out], counter, [], params, label=f"t{i}"))
    b.tasks = tasks
    nprod = {c.id: sum(t.out_counter == c.id for t in tasks) for c in b.counters}
    sms = draw(st.sampled_from((None, 1, 2)))
    used = sorted({u.out_counter for u in tasks})
    for t in tasks:
        earlier = sorted({u.out_counter for u in tasks[: t.id]} - {t.out_counter})
        others = [c for c in used if c != t.out_counter] or used
        pool = earlier if earlier and draw(st.integers(0, 4)) else others
        if not draw(st.integers(0, 7)):
            pool = used
        for c in draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)):
            full = nprod[c]
            thr = draw(st.sampled_from((full, full, full, 1, full + 1)))
            t.waits.append(Wait(c, thr))
        if sms is not None:
            t.sm = draw(st.integers(0, sms - 1))
    prog = b.build()
    if pages and len(acts) >= 2 and draw(st.booleans()):
        prog.pages = PageAllocation({acts[0]: 0, acts[1]: 0}, [Page(0, MemSpace.GLOBAL_SCRATCH, 64)])
    if sms is not None:
        prog.target = TARGETS["h100"]
    return prog


MUTATIONS = (
    "drop-wait",
    "lower-threshold",
    "raise-threshold",
    "share-counter",
    "move-sm",
    "move-task",
    "retarget-output",
)


@st.composite
def mutated_valid_programs(draw: Any, max_tasks: int = 8) -> tuple[str, MegakernelProgram]:
    """A valid program with one rule-relevant edit (which may or may not break it)."""
    prog = draw(valid_programs(max_tasks=max_tasks))
    how = draw(st.sampled_from(MUTATIONS))
    tasks = prog.tasks
    t = draw(st.sampled_from(tasks))
    if how in ("drop-wait", "lower-threshold", "raise-threshold") and t.waits:
        i = draw(st.integers(0, len(t.waits) - 1))
        if how == "drop-wait":
            del t.waits[i]
        else:
            t.waits[i].threshold += -1 if how == "lower-threshold" else 1
    elif how == "share-counter":
        t.out_counter = draw(st.sampled_from(tasks)).out_counter
    elif how == "move-sm":
        t.sm = draw(st.integers(0, 3))
    elif how == "move-task":
        tasks.remove(t)
        tasks.insert(draw(st.integers(0, len(tasks))), t)
    elif how == "retarget-output" and t.outputs:
        same = [
            b.id
            for b in prog.buffers
            if b.kind is BufferKind.ACTIVATION
            and b.shape == prog.buffers[t.outputs[0]].shape
            and b.dtype == prog.buffers[t.outputs[0]].dtype
        ]
        if same:
            t.outputs[0] = draw(st.sampled_from(same))
    return how, prog
