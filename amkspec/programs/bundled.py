"""The bundled example programs of ``examples/`` (written by ``examples/make_examples.py``).

* ``spec_example.json``: the example of spec §6, completed into a valid program.
* ``decoder_layer.json``: one tiny Llama-style decoder layer, one decode step at position 0,
  following the lowering conventions of the reference (buffer names, task order, counters).
* ``rejected_partial_join.json``: a consumer that waits for 2 of the 3 tiles of a shared
  counter, which the all-join rule of spec §3.2 rejects (``meta.model``
  ``"examples.rejected_partial_join"``: a provenance tag, kept literal).
"""

from __future__ import annotations

import math

from amkspec.ir import (
    TARGETS,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
    ScheduleConfig,
)

Op = InstructionKind
Kind = BufferKind


def spec_example() -> MegakernelProgram:
    """Spec §6: RMSNORM → GEMV on 16-wide F16 vectors, the normalised activation in SMEM."""
    b = ProgramBuilder()
    x = b.new_buffer("x", Kind.IO_INPUT, DType.F16, (1, 16))
    w = b.new_buffer("proj.w", Kind.WEIGHT, DType.F16, (16, 16), source="proj.weight")
    g = b.new_buffer("norm.w", Kind.WEIGHT, DType.F16, (16,), source="norm.weight")
    xn = b.new_buffer("xn", Kind.ACTIVATION, DType.F16, (1, 16), space=MemSpace.SMEM)
    y = b.new_buffer("y", Kind.IO_OUTPUT, DType.F16, (1, 16))
    norm = b.add_task(
        Op.RMSNORM, [x, g], [xn], params={"eps": 1e-6, "hidden": 16}, sm=0, label="rmsnorm"
    )
    b.counters[b.tasks[norm].out_counter].note = "rmsnorm done"
    gemv = b.add_task(
        Op.GEMV_TILE, [xn, w], [y], waits=[b.after(norm)],
        params={"K": 16, "N_tile": 16, "n_off": 0}, sm=0, label="gemv",
    )
    b.counters[b.tasks[gemv].out_counter].note = "gemv done"
    pages = PageAllocation({xn: 0}, [Page(0, MemSpace.SMEM, 64, live_start=norm, live_end=gemv)])
    return b.build(
        meta={"model": "toy", "gpu": "rtx5090"},
        target=TARGETS["rtx5090"],
        config=ScheduleConfig(),
        pages=pages,
    )


class _Decoder:
    """Emits one decoder layer the way the reference lowering does (OPS_FACTS §9.2-§9.3)."""

    def __init__(self, hidden: int, n_heads: int, n_kv_heads: int, head_dim: int,
                 intermediate: int, vocab: int, max_seq: int, tile: int, pos: int) -> None:
        self.b = ProgramBuilder()
        self.H, self.nh, self.nkv, self.hd = hidden, n_heads, n_kv_heads, head_dim
        self.I, self.V, self.S, self.tile, self.pos = intermediate, vocab, max_seq, tile, pos
        self.dbytes = DType.F32.bits // 8

    def act(self, name: str, shape: tuple[int, ...], kind: BufferKind = Kind.ACTIVATION) -> int:
        return self.b.new_buffer(name, kind, DType.F32, shape)

    def weight(self, key: str, shape: tuple[int, ...]) -> int:
        return self.b.new_buffer(key, Kind.WEIGHT, DType.F32, shape, source=key)

    def task(self, op: InstructionKind, ins: list[int], out: int, waits: list[tuple[int, int]],
             label: str, params: dict[str, float] | None = None, cost: tuple[int, int] = (0, 0)) -> int:
        """A single-task producer with a fresh counter; returns its counter."""
        t = self.b.add_task(op, ins, [out], waits=waits, params=params, label=label,
                            est_bytes=cost[0], est_flops=cost[1])
        return self.b.tasks[t].out_counter

    def gemv(self, x: int, out: int, w: int, k: int, n: int, waits: list[tuple[int, int]],
             label: str) -> tuple[int, int]:
        """Tiles of width ``tile`` sharing one counter; returns (counter, number of tiles)."""
        n_tiles = math.ceil(n / self.tile)
        c = self.b.new_counter(f"{label} ({n_tiles} tiles)")
        for i in range(n_tiles):
            n_tile = min(self.tile, n - i * self.tile)
            self.b.add_task(
                Op.GEMV_TILE, [x, w], [out], out_counter=c, waits=waits,
                params={"K": k, "N_tile": n_tile, "n_off": i * self.tile}, label=f"{label}[t{i}]",
                est_bytes=k * self.dbytes * n_tile, est_flops=2 * k * n_tile,
            )
        return c, n_tiles

    def norm(self, x: int, x_counter: int, key: str, out_name: str, label: str) -> tuple[int, int]:
        out = self.act(out_name, (1, self.H))
        w = self.weight(key, (self.H,))
        c = self.task(Op.RMSNORM, [x, w], out, [(x_counter, 1)], label,
                      {"eps": 1e-6, "hidden": self.H}, (self.H * self.dbytes, 4 * self.H))
        return out, c

    def build(self) -> MegakernelProgram:
        H, nh, nkv, hd, inter = self.H, self.nh, self.nkv, self.hd, self.I
        token, pos, rid = (self.act(n, (1,), Kind.IO_INPUT) for n in ("token_id", "pos", "reshape_id0"))
        for i in (token, pos, rid):
            self.b.buffers[i].dtype = DType.I32
        h0 = self.act("h0", (1, H))
        emb = self.weight("embed.weight", (self.V, H))
        c_h0 = self.task(Op.EMBED, [token, emb], h0, [], "embed", {"hidden": H}, (H * self.dbytes, 0))
        an, c_an = self.norm(h0, c_h0, "layers.0.input_norm", "L0.an", "L0.input_norm")
        proj = {}
        for name, width in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
            out = self.act(f"L0.{name}", (1, width))
            w = self.weight(f"layers.0.attn.{name}_proj.weight", (width, H))
            proj[name] = (out, *self.gemv(an, out, w, H, width, [(c_an, 1)], f"L0.{name}_proj"))
        qr, c_qr = self.rope("q", proj["q"], rid, pos, (nh, hd))
        kr, c_kr = self.rope("k", proj["k"], rid, pos, (1, nkv, hd))
        kcache = self.act("L0.kcache", (self.S, nkv, hd), Kind.KV_CACHE)
        vcache = self.act("L0.vcache", (self.S, nkv, hd), Kind.KV_CACHE)
        kv_cost = (nkv * hd * self.dbytes, 0)
        c_k = self.task(Op.KV_APPEND, [kr, kcache], kcache, [(c_kr, 1)], "L0.k_append",
                        {"pos": self.pos}, kv_cost)
        v, c_v, n_v = proj["v"]
        c_v2 = self.task(Op.KV_APPEND, [v, vcache], vcache, [(c_v, n_v)], "L0.v_append",
                         {"pos": self.pos}, kv_cost)
        attn = self.act("L0.attn", (1, nh * hd))
        kv_len = self.pos + 1
        c_attn = self.task(
            Op.ATTENTION_TILE, [qr, kcache, vcache], attn, [(c_qr, 1), (c_k, 1), (c_v2, 1)],
            "L0.attention",
            {"head_dim": hd, "kv_start": 0, "kv_len": kv_len, "scale": hd**-0.5,
             "n_heads": nh, "n_kv_heads": nkv},
            (2 * kv_len * nkv * hd * self.dbytes, 4 * nh * hd * kv_len),
        )
        o = self.act("L0.o", (1, H))
        c_o, n_o = self.gemv(attn, o, self.weight("layers.0.attn.o_proj.weight", (H, nh * hd)),
                             nh * hd, H, [(c_attn, 1)], "L0.o_proj")
        h_attn = self.act("L0.h_attn", (1, H))
        c_ha = self.task(Op.ADD, [h0, o], h_attn, [(c_h0, 1), (c_o, n_o)], "L0.attn_residual",
                         cost=(H * self.dbytes, H))
        mn, c_mn = self.norm(h_attn, c_ha, "layers.0.post_norm", "L0.mn", "L0.post_norm")
        mlp = {}
        for name in ("gate", "up"):
            out = self.act(f"L0.{name}", (1, inter))
            w = self.weight(f"layers.0.mlp.{name}_proj.weight", (inter, H))
            mlp[name] = (out, *self.gemv(mn, out, w, H, inter, [(c_mn, 1)], f"L0.{name}_proj"))
        act = self.act("L0.act", (1, inter))
        (gate, c_g, n_g), (up, c_u, n_u) = mlp["gate"], mlp["up"]
        c_act = self.task(Op.SILU_MUL, [gate, up], act, [(c_g, n_g), (c_u, n_u)], "L0.swiglu",
                          cost=(inter * self.dbytes, 3 * inter))
        d = self.act("L0.d", (1, H))
        c_d, n_d = self.gemv(act, d, self.weight("layers.0.mlp.down_proj.weight", (H, inter)),
                             inter, H, [(c_act, 1)], "L0.down_proj")
        h_mlp = self.act("L0.h_mlp", (1, H))
        c_hm = self.task(Op.ADD, [h_attn, d], h_mlp, [(c_ha, 1), (c_d, n_d)], "L0.mlp_residual",
                         cost=(H * self.dbytes, H))
        hf, c_hf = self.norm(h_mlp, c_hm, "final_norm", "hf", "final_norm")
        logits = self.act("logits", (1, self.V), Kind.IO_OUTPUT)
        self.gemv(hf, logits, self.weight("lm_head.weight", (self.V, H)), H, self.V, [(c_hf, 1)], "lm_head")
        return self.b.build(
            meta={"model": "examples.decoder_layer", "gpu": "rtx5090", "regime": "decode",
                  "pos": self.pos, "kv_len": kv_len, "dtype": "F32", "n_layers": 1},
            target=TARGETS["rtx5090"],
            config=ScheduleConfig(tiling={"gemv": {"N_tile": self.tile}}),
        )

    def rope(self, name: str, src: tuple[int, int, int], rid: int, pos: int,
             shape: tuple[int, ...]) -> tuple[int, int]:
        """Reshape a flat projection into heads (EMBED as a row copy) and rotate it."""
        flat, c_flat, n_tiles = src
        heads = self.act(f"L0.{name}r.hs", shape)
        c_heads = self.task(Op.EMBED, [rid, flat], heads, [(c_flat, n_tiles)],
                            f"L0.rope_{name}.reshape", {"hidden": self.hd})
        out = self.act(f"L0.{name}r", shape)
        n_vec = math.prod(shape[:-1])
        c_out = self.task(Op.ROPE, [heads, pos], out, [(c_heads, 1)], f"L0.rope_{name}",
                          {"head_dim": self.hd, "theta": 10000.0}, (0, 6 * n_vec * self.hd))
        return out, c_out


def decoder_layer() -> MegakernelProgram:
    """hidden 32, 2 query heads sharing 1 kv head of 16, intermediate 64, vocab 64, tiles of 16."""
    return _Decoder(hidden=32, n_heads=2, n_kv_heads=1, head_dim=16, intermediate=64, vocab=64,
                    max_seq=16, tile=16, pos=0).build()


def rejected_partial_join() -> MegakernelProgram:
    """Three GEMV tiles share one counter; the consumer waits for only two of them (spec §3.2)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", Kind.IO_INPUT, DType.F32, (1, 8))
    w = b.new_buffer("proj.weight", Kind.WEIGHT, DType.F32, (24, 8))
    y = b.new_buffer("y", Kind.ACTIVATION, DType.F32, (1, 24))
    out = b.new_buffer("out", Kind.IO_OUTPUT, DType.F32, (1, 24))
    tiles = b.new_counter("proj (3 tiles)")
    for i in range(3):
        b.add_task(Op.GEMV_TILE, [x, w], [y], out_counter=tiles,
                   params={"K": 8, "N_tile": 8, "n_off": 8 * i}, label=f"proj[t{i}]")
    b.add_task(Op.COPY, [y], [out], waits=[(tiles, 2)], label="copy after 2 of 3 tiles")
    return b.build(meta={"model": "examples.rejected_partial_join",
                         "notes": "threshold 2 on a counter with 3 producers: a first-k-of-N race"})


EXAMPLES = {
    "spec_example.json": spec_example,
    "decoder_layer.json": decoder_layer,
    "rejected_partial_join.json": rejected_partial_join,
}
"""File name → builder of every bundled example."""

