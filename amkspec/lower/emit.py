"""Emit one decode step of a decoder as a megakernel program (the lowering guide).

Task order, buffer order, names, labels, counter notes, params and cost annotations are those of
the original lowering, so a program lowered here is byte-identical to the original's for the same
inputs. Every produced tensor gets one fresh counter; the tiles of a projection share it and each
consumer waits for all of them (the all-join of spec §3.3); read-only buffers need no wait.

A ``fusion_grouping`` group (:data:`~amkspec.lower.knobs.FUSION_GROUPS`) replaces the tasks of
that group in every layer by ONE untiled FUSED task (spec §7.8) whose recipe runs
the group's steps in order, intermediates in scratch of the activation dtype (so the result is
bit-identical to the unfused tasks). Fused tasks are never tiled: the final step writes the whole
output, so column tiles of it would overwrite each other.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder, Wait
from amkspec.ir.opcodes import RECIPE_DTYPES
from amkspec.lower.knobs import DOWN_RESIDUAL, GATE_UP_SILU, O_RESIDUAL
from amkspec.lower.tiling import kv_shards, n_partitions, tile_width, tiles
from amkspec.models.config import ModelConfig
from amkspec.models.quant import NativeQuant, QuantFormat, QuantSpec

Op = InstructionKind

SCRATCH_DTYPE = {dtype: name for name, dtype in RECIPE_DTYPES.items() if dtype is not None}
"""The recipe ``out_dtype`` of a fused step's scratch: the activation dtype of the unfused tensor."""


@attrs.define
class Ready:
    """A tensor and the wait a reader needs (None for read-only externals)."""

    buf: int
    wait: Wait | None = None


@attrs.define
class Recipe:
    """A FUSED task being built: its inputs, its steps, and the summed cost of the steps."""

    inputs: list[Ready] = attrs.Factory(list)
    steps: list[dict[str, Any]] = attrs.Factory(list)
    nbytes: int = 0
    flops: int = 0

    def arg(self, ready: Ready) -> dict[str, int]:
        """The ``{"in": k}`` reference of a task input (added once per buffer)."""
        for k, have in enumerate(self.inputs):
            if have.buf == ready.buf:
                return {"in": k}
        self.inputs.append(ready)
        return {"in": len(self.inputs) - 1}

    def step(self, op: Op, args: list[dict[str, int]], params: dict[str, Any], cost: tuple[int, int],
             shape: tuple[int, ...], dtype: DType) -> dict[str, int]:
        """Append a step writing a fresh scratch of ``shape``; return its ``{"s": j}`` reference."""
        j = len(self.steps)
        self.steps.append({"op": int(op), "args": args, "out": j, "params": params,
                           "out_shape": list(shape), "out_dtype": SCRATCH_DTYPE[dtype]})
        self.nbytes += cost[0]
        self.flops += cost[1]
        return {"s": j}

    def params(self) -> dict[str, Any]:
        """The task params: the last step writes ``"final"`` (the task's output)."""
        *body, last = self.steps
        final = {k: v for k, v in last.items() if k not in ("out_shape", "out_dtype")}
        return {"recipe": {"steps": [*body, {**final, "out": "final"}]}}


@attrs.define
class StepEmitter:
    """Builds the task DAG of one decode step at position ``pos`` for ``batch`` sequences."""

    model: ModelConfig
    dtype: DType
    pos: int
    batch: int
    tiling: dict[str, Any]
    num_sms: int | None
    quant: QuantSpec | NativeQuant | None = None
    fusion: tuple[tuple[str, ...], ...] = ()
    b: ProgramBuilder = attrs.Factory(ProgramBuilder)
    quantized: dict[str, list[Ready]] = attrs.Factory(dict)
    """Weight key → its quantized buffers (levels, table), made once per key."""

    @property
    def dbytes(self) -> int:
        return max(1, self.dtype.bits // 8)

    def _act(self, name: str, shape: tuple[int, ...], kind: BufferKind = BufferKind.ACTIVATION) -> int:
        return self.b.new_buffer(name, kind, self.dtype, shape)

    def _weight(self, key: str, shape: tuple[int, ...]) -> int:
        return self.b.new_buffer(key, BufferKind.WEIGHT, self.dtype, shape, source=key)

    def _task(self, op: Op, label: str, inputs: list[Ready], out: int, params: dict[str, Any],
              cost: tuple[int, int], counter: int | None = None, sm: int | None = None) -> Ready:
        waits = [r.wait for r in inputs if r.wait is not None]
        tid = self.b.add_task(op, [r.buf for r in inputs], [out], out_counter=counter, waits=waits,
                              params=params, sm=sm, label=label, est_bytes=cost[0], est_flops=cost[1])
        return Ready(out, Wait(self.b.tasks[tid].out_counter, 1))

    def _rows(self, width: int) -> tuple[int, int]:
        return (self.batch, width)

    def _format(self, key: str) -> QuantFormat | None:
        """How weight ``key`` is quantized (None: floating point)."""
        return None if self.quant is None else self.quant.format_of(key, self.model)

    def _quantized(self, key: str, fmt: QuantFormat, n: int, k: int) -> list[Ready]:
        """The levels ``key`` and the table ``key.scales`` of a quantized ``[n, k]`` weight."""
        if key not in self.quantized:
            levels = self.b.new_buffer(key, BufferKind.WEIGHT, fmt.qdtype, (n, k), source=key)
            table = self.b.new_buffer(f"{key}.scales", BufferKind.WEIGHT, DType.F16, fmt.table_shape(n, k))
            self.quantized[key] = [Ready(levels), Ready(table)]
        return self.quantized[key]

    def _proj_weights(self, key: str, n: int, k: int) -> tuple[list[Ready], int, dict[str, Any]]:
        """The weight buffers of an ``N × K`` projection, its bytes per row and its quant params."""
        fmt = self._format(key)
        if fmt is None:
            return [Ready(self._weight(key, (n, k)))], k * self.dbytes, {}
        return self._quantized(key, fmt, n, k), fmt.row_bytes(k), fmt.params()

    def _proj_op(self) -> Op:
        return Op.GEMV_TILE if self.batch == 1 else Op.GEMM_TILE

    def _proj_params(self, k: int, width: int, off: int, extra: dict[str, Any]) -> dict[str, Any]:
        params = {"K": k, "N_tile": width, "n_off": off, **extra}
        return {"M_tile": self.batch, **params} if self.batch > 1 else params

    def projection(self, label: str, x: Ready, key: str, out_name: str, n: int, k: int,
                   out_kind: BufferKind = BufferKind.ACTIVATION) -> Ready:
        """Column tiles ``x @ W[n_off:n_off+N_tile].T`` (GEMV_TILE, or GEMM_TILE when B > 1)."""
        out = self._act(out_name, self._rows(n), out_kind)
        weights, row_bytes, extra = self._proj_weights(key, n, k)
        parts = tiles(n, tile_width(n, self.tiling))
        counter = self.b.new_counter(f"{label} ({len(parts)} tiles)")
        for i, (off, width) in enumerate(parts):
            cost = (row_bytes * width, 2 * k * width * self.batch)
            self._task(self._proj_op(), f"{label}[t{i}]", [x, *weights], out,
                       self._proj_params(k, width, off, extra), cost, counter=counter)
        return Ready(out, Wait(counter, len(parts)))

    def fused_projection(self, r: Recipe, x: Ready, key: str, n: int, k: int) -> dict[str, int]:
        """A recipe step computing the whole ``x @ W.T`` (one untiled GEMV/GEMM) into scratch."""
        weights, row_bytes, extra = self._proj_weights(key, n, k)
        args = [r.arg(x), *(r.arg(w) for w in weights)]
        return r.step(self._proj_op(), args, self._proj_params(k, n, 0, extra),
                      (row_bytes * n, 2 * k * n * self.batch), self._rows(n), self.dtype)

    def fused_elementwise(self, r: Recipe, op: Op, a: dict[str, int], b: dict[str, int], width: int) -> None:
        """A recipe step ``op(a, b)`` (ADD or SILU_MUL) into scratch, priced as the unfused task."""
        n = self.batch * width
        r.step(op, [a, b], {}, (n * self.dbytes, 3 * n if op is Op.SILU_MUL else n), self._rows(width),
               self.dtype)

    def fused(self, label: str, r: Recipe, out_name: str, width: int) -> Ready:
        """Emit the recipe as one FUSED task writing a fresh ``[B, width]`` activation."""
        out = self._act(out_name, self._rows(width))
        return self._task(Op.FUSED, label, r.inputs, out, r.params(), (r.nbytes, r.flops))

    def projection_residual(self, label: str, x: Ready, key: str, resid: Ready, out_name: str,
                            n: int, k: int) -> Ready:
        """``resid + x @ W.T`` as one FUSED task (the o/residual and down/residual groups)."""
        r = Recipe()
        proj = self.fused_projection(r, x, key, n, k)
        self.fused_elementwise(r, Op.ADD, r.arg(resid), proj, n)
        return self.fused(label, r, out_name, n)

    def gate_up_silu(self, label: str, x: Ready, gate_key: str, up_key: str, out_name: str,
                     n: int, k: int) -> Ready:
        """``silu(x @ Wg.T) * (x @ Wu.T)`` as one FUSED task (the gate/up/silu group)."""
        r = Recipe()
        gate = self.fused_projection(r, x, gate_key, n, k)
        up = self.fused_projection(r, x, up_key, n, k)
        self.fused_elementwise(r, Op.SILU_MUL, gate, up, n)
        return self.fused(label, r, out_name, n)

    def rmsnorm(self, label: str, x: Ready, key: str, out_name: str) -> Ready:
        h = self.model.hidden
        out = self._act(out_name, self._rows(h))
        w = Ready(self._weight(key, (h,)))
        bh = self.batch * h
        return self._task(Op.RMSNORM, label, [x, w], out, {"eps": self.model.rms_eps, "hidden": h},
                          (bh * self.dbytes, 4 * bh))

    def _heads(self, name: str, n: int) -> tuple[int, ...]:
        hd = self.model.head_dim
        return (n, hd) if self.batch == 1 and name == "q" else (self.batch, n, hd)

    def roped(self, p: str, which: str, flat: Ready, n: int, ids: Ready, pos: Ready) -> Ready:
        """Reshape a flat projection to heads (the EMBED bridge of spec §7), then RoPE."""
        c = self.model
        shape = self._heads(which, n)
        hs = self._act(f"{p}.{which}r.hs", shape)
        hs_ready = self._task(Op.EMBED, f"{p}.rope_{which}.reshape", [ids, flat], hs,
                              {"hidden": c.head_dim}, (0, 0))
        out = self._act(f"{p}.{which}r", shape)
        return self._task(Op.ROPE, f"{p}.rope_{which}", [hs_ready, pos], out,
                          {"head_dim": c.head_dim, "theta": c.rope_theta}, (0, 6 * n * c.head_dim))

    def kv_append(self, label: str, new: Ready, cache: int) -> Ready:
        c = self.model
        cost = (self.batch * c.kv_dim * self.dbytes, 0)
        return self._task(Op.KV_APPEND, label, [new, Ready(cache)], cache, {"pos": self.pos}, cost)

    def attention(self, p: str, q: Ready, k: Ready, v: Ready) -> Ready:
        """ATTENTION_TILE over ``[0, pos]``, split into flash-decoding shards when configured."""
        c = self.model
        kv_len = self.pos + 1
        base = {"head_dim": c.head_dim, "kv_start": 0, "kv_len": kv_len, "scale": c.scale,
                "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads}
        parts = n_partitions(self.tiling, kv_len, self.num_sms, self.batch)
        if parts == 1:
            out = self._act(f"{p}.attn", self._rows(c.q_dim))
            return self._task(Op.ATTENTION_TILE, f"{p}.attention", [q, k, v], out, base,
                              self._attention_cost(kv_len))
        shards = kv_shards(kv_len, parts)
        bufs = [self._act(f"{p}.attn.part{i}", (c.n_heads, c.head_dim + 2)) for i in range(len(shards))]
        out = self._act(f"{p}.attn", self._rows(c.q_dim))
        partials = []
        for i, ((start, length), buf) in enumerate(zip(shards, bufs, strict=True)):
            params = {**base, "kv_start": start, "kv_len": length, "flags": 2}
            sm = i % self.num_sms if self.num_sms else i
            partials.append(self._task(Op.ATTENTION_TILE, f"{p}.attention.s{i}", [q, k, v], buf, params,
                                       self._attention_cost(length), sm=sm))
        counter = self.b.new_counter(f"{p}.attention")
        cost = (len(bufs) * c.n_heads * (c.head_dim + 2) * self.dbytes, len(bufs) * c.q_dim)
        params = {"head_dim": c.head_dim, "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads}
        return self._task(Op.ATTENTION_COMBINE, f"{p}.attention.comb", partials, out, params, cost,
                          counter=counter)

    def _attention_cost(self, kv_len: int) -> tuple[int, int]:
        c = self.model
        return (self.batch * 2 * kv_len * c.kv_dim * self.dbytes,
                self.batch * 4 * c.n_heads * c.head_dim * kv_len)

    def elementwise(self, op: Op, label: str, a: Ready, b: Ready, out_name: str, width: int) -> Ready:
        out = self._act(out_name, self._rows(width))
        n = self.batch * width
        flops = 3 * n if op is Op.SILU_MUL else n
        return self._task(op, label, [a, b], out, {}, (n * self.dbytes, flops))

    def layer(self, n: int, resid: Ready, ids: Ready, pos: Ready) -> Ready:
        """The 19 steps of one decoder layer (the lowering guide)."""
        c, p, w = self.model, f"L{n}", f"layers.{n}"
        an = self.rmsnorm(f"{p}.input_norm", resid, f"{w}.input_norm", f"{p}.an")
        q = self.projection(f"{p}.q_proj", an, f"{w}.attn.q_proj.weight", f"{p}.q", c.q_dim, c.hidden)
        k = self.projection(f"{p}.k_proj", an, f"{w}.attn.k_proj.weight", f"{p}.k", c.kv_dim, c.hidden)
        v = self.projection(f"{p}.v_proj", an, f"{w}.attn.v_proj.weight", f"{p}.v", c.kv_dim, c.hidden)
        qr = self.roped(p, "q", q, c.n_heads, ids, pos)
        kr = self.roped(p, "k", k, c.n_kv_heads, ids, pos)
        cache_shape: tuple[int, ...] = (c.max_seq, c.n_kv_heads, c.head_dim)
        if self.batch > 1:
            cache_shape = (self.batch, *cache_shape)
        kcache = self._act(f"{p}.kcache", cache_shape, BufferKind.KV_CACHE)
        vcache = self._act(f"{p}.vcache", cache_shape, BufferKind.KV_CACHE)
        kc = self.kv_append(f"{p}.k_append", kr, kcache)
        vc = self.kv_append(f"{p}.v_append", v, vcache)
        attn = self.attention(p, qr, kc, vc)
        if O_RESIDUAL in self.fusion:
            h_attn = self.projection_residual(f"{p}.o_proj+attn_residual", attn, f"{w}.attn.o_proj.weight",
                                              resid, f"{p}.h_attn", c.hidden, c.q_dim)
        else:
            o = self.projection(f"{p}.o_proj", attn, f"{w}.attn.o_proj.weight", f"{p}.o", c.hidden, c.q_dim)
            h_attn = self.elementwise(Op.ADD, f"{p}.attn_residual", resid, o, f"{p}.h_attn", c.hidden)
        mn = self.rmsnorm(f"{p}.post_norm", h_attn, f"{w}.post_norm", f"{p}.mn")
        i = c.intermediate
        if GATE_UP_SILU in self.fusion:
            act = self.gate_up_silu(f"{p}.gate_up_swiglu", mn, f"{w}.mlp.gate_proj.weight",
                                    f"{w}.mlp.up_proj.weight", f"{p}.act", i, c.hidden)
        else:
            gate = self.projection(f"{p}.gate_proj", mn, f"{w}.mlp.gate_proj.weight", f"{p}.gate", i,
                                   c.hidden)
            up = self.projection(f"{p}.up_proj", mn, f"{w}.mlp.up_proj.weight", f"{p}.up", i, c.hidden)
            act = self.elementwise(Op.SILU_MUL, f"{p}.swiglu", gate, up, f"{p}.act", i)
        if DOWN_RESIDUAL in self.fusion:
            return self.projection_residual(f"{p}.down_proj+mlp_residual", act, f"{w}.mlp.down_proj.weight",
                                            h_attn, f"{p}.h_mlp", c.hidden, i)
        d = self.projection(f"{p}.down_proj", act, f"{w}.mlp.down_proj.weight", f"{p}.d", c.hidden, i)
        return self.elementwise(Op.ADD, f"{p}.mlp_residual", h_attn, d, f"{p}.h_mlp", c.hidden)

    def embed(self, token: Ready) -> Ready:
        """The token's row of ``embed.weight``: one EMBED, or for a quantized table an EMBED of the
        levels, an EMBED of the table row and a DEQUANT (spec §7.9)."""
        c, key = self.model, "embed.weight"
        h0 = self._act("h0", self._rows(c.hidden))
        fmt = self._format(key)
        if fmt is None:
            table = Ready(self._weight(key, (c.vocab, c.hidden)))
            return self._task(Op.EMBED, "embed", [token, table], h0, {"hidden": c.hidden},
                              (self.batch * c.hidden * self.dbytes, 0))
        levels, table = self._quantized(key, fmt, c.vocab, c.hidden)
        row_q = self.b.new_buffer("h0.q", BufferKind.ACTIVATION, fmt.qdtype, self._rows(c.hidden))
        row_t = self.b.new_buffer("h0.scales", BufferKind.ACTIVATION, DType.F16, fmt.table_shape(1, c.hidden))
        q_bytes = fmt.row_bytes(c.hidden) - 2 * math.prod(fmt.table_shape(1, c.hidden))
        got_q = self._task(Op.EMBED, "embed.q", [token, levels], row_q, {"hidden": c.hidden}, (q_bytes, 0))
        got_t = self._task(Op.EMBED, "embed.scales", [token, table], row_t, {"hidden": c.hidden},
                           (fmt.row_bytes(c.hidden) - q_bytes, 0))
        return self._task(Op.DEQUANT, "embed", [got_q, got_t], h0, fmt.params(),
                          (c.hidden * self.dbytes, 2 * c.hidden))

    def emit(self) -> ProgramBuilder:
        """All tasks of the step: IO buffers, embed, the layers, final norm and lm head."""
        c = self.model
        token, pos, ids = (Ready(self.b.new_buffer(name, BufferKind.IO_INPUT, DType.I32, (self.batch,)))
                           for name in ("token_id", "pos", "reshape_id0"))
        x = self.embed(token)
        for n in range(c.n_layers):
            x = self.layer(n, x, ids, pos)
        hf = self.rmsnorm("final_norm", x, "final_norm", "hf")
        self.projection("lm_head", hf, "lm_head.weight", "logits", c.vocab, c.hidden, BufferKind.IO_OUTPUT)
        return self.b
