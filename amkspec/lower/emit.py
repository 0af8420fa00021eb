"""Emit one decode step of a decoder as a megakernel program (OPS_FACTS §9.2-§9.5).

Task order, buffer order, names, labels, counter notes, params and cost annotations are those of
the original lowering, so a program lowered here is byte-identical to the original's for the same
inputs. Every produced tensor gets one fresh counter; the tiles of a projection share it and each
consumer waits for all of them (the all-join of spec §3.2); read-only buffers need no wait.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder, Wait
from amkspec.lower.tiling import kv_shards, n_partitions, tile_width, tiles
from amkspec.models.config import ModelConfig
from amkspec.models.quant import QuantSpec, quantized_keys

Op = InstructionKind


@attrs.define
class Ready:
    """A tensor and the wait a reader needs (None for read-only externals)."""

    buf: int
    wait: Wait | None = None


@attrs.define
class StepEmitter:
    """Builds the task DAG of one decode step at position ``pos`` for ``batch`` sequences."""

    model: ModelConfig
    dtype: DType
    pos: int
    batch: int
    tiling: dict[str, Any]
    num_sms: int | None
    quant: QuantSpec | None = None
    b: ProgramBuilder = attrs.Factory(ProgramBuilder)

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

    def projection(self, label: str, x: Ready, key: str, out_name: str, n: int, k: int,
                   out_kind: BufferKind = BufferKind.ACTIVATION) -> Ready:
        """Column tiles ``x @ W[n_off:n_off+N_tile].T`` (GEMV_TILE, or GEMM_TILE when B > 1)."""
        out = self._act(out_name, self._rows(n), out_kind)
        q = self.quant if self.quant is not None and key in quantized_keys(self.model) else None
        if q is None:
            weights = [Ready(self._weight(key, (n, k)))]
            row_bytes = k * self.dbytes
            extra: dict[str, Any] = {}
        else:
            n_groups = math.ceil(k / q.group)
            weights = [Ready(self.b.new_buffer(key, BufferKind.WEIGHT, q.qdtype, (n, k), source=key)),
                       Ready(self.b.new_buffer(f"{key}.scales", BufferKind.WEIGHT, DType.F16, (n, n_groups)))]
            row_bytes = math.ceil(k * q.bits / 8) + 2 * n_groups
            extra = {"qdtype": int(q.qdtype), "group": q.group}
        parts = tiles(n, tile_width(n, self.tiling))
        counter = self.b.new_counter(f"{label} ({len(parts)} tiles)")
        op = Op.GEMV_TILE if self.batch == 1 else Op.GEMM_TILE
        for i, (off, width) in enumerate(parts):
            params = {"K": k, "N_tile": width, "n_off": off, **extra}
            if self.batch > 1:
                params = {"M_tile": self.batch, **params}
            cost = (row_bytes * width, 2 * k * width * self.batch)
            self._task(op, f"{label}[t{i}]", [x, *weights], out, params, cost, counter=counter)
        return Ready(out, Wait(counter, len(parts)))

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
        """Reshape a flat projection to heads (the EMBED bridge of OPS_FACTS §3.3), then RoPE."""
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
        """The 19 steps of one decoder layer (OPS_FACTS §9.3)."""
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
        o = self.projection(f"{p}.o_proj", attn, f"{w}.attn.o_proj.weight", f"{p}.o", c.hidden, c.q_dim)
        h_attn = self.elementwise(Op.ADD, f"{p}.attn_residual", resid, o, f"{p}.h_attn", c.hidden)
        mn = self.rmsnorm(f"{p}.post_norm", h_attn, f"{w}.post_norm", f"{p}.mn")
        i = c.intermediate
        gate = self.projection(f"{p}.gate_proj", mn, f"{w}.mlp.gate_proj.weight", f"{p}.gate", i, c.hidden)
        up = self.projection(f"{p}.up_proj", mn, f"{w}.mlp.up_proj.weight", f"{p}.up", i, c.hidden)
        act = self.elementwise(Op.SILU_MUL, f"{p}.swiglu", gate, up, f"{p}.act", i)
        d = self.projection(f"{p}.down_proj", act, f"{w}.mlp.down_proj.weight", f"{p}.d", c.hidden, i)
        return self.elementwise(Op.ADD, f"{p}.mlp_residual", h_attn, d, f"{p}.h_mlp", c.hidden)

    def emit(self) -> ProgramBuilder:
        """All tasks of the step: IO buffers, embed, the layers, final norm and lm head."""
        c = self.model
        token, pos, ids = (Ready(self.b.new_buffer(name, BufferKind.IO_INPUT, DType.I32, (self.batch,)))
                           for name in ("token_id", "pos", "reshape_id0"))
        h0 = self._act("h0", self._rows(c.hidden))
        table = Ready(self._weight("embed.weight", (c.vocab, c.hidden)))
        x = self._task(Op.EMBED, "embed", [token, table], h0, {"hidden": c.hidden},
                       (self.batch * c.hidden * self.dbytes, 0))
        for n in range(c.n_layers):
            x = self.layer(n, x, ids, pos)
        hf = self.rmsnorm("final_norm", x, "final_norm", "hf")
        self.projection("lm_head", hf, "lm_head.weight", "logits", c.vocab, c.hidden, BufferKind.IO_OUTPUT)
        return self.b
