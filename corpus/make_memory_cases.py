"""Generate the memory-safety cases (M4xx, spec §3.4 and chapter 4) under ``corpus/cases/memory/``.

Each code gets a triggering case ``<code>_<slug>.json`` (verdict rejected, the code expected) and a
near miss ``<code>_<slug>_ok.json``: the same one-task program with the offending shape or param
corrected, valid under every other rule too (verdict accepted, the code absent). Inputs are IO_INPUT
or WEIGHT buffers and the output an IO_OUTPUT, so no ordering rule is involved.

Run ``python3 -m corpus.make_memory_cases`` from the repository root to rewrite the files;
a test checks that the committed files equal this script's output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amkspec.conformance.rules import validate_case_rules
from amkspec.ir import (
    DType,
    InstructionKind,
    MegakernelProgram,
    to_dict,
)
from amkspec.programs.parts import GEMV_8, BufSpec, io, kv, one_task, res, wt
from amkspec.proofs.diagnostics import CODES
from corpus.casefiles import write_cases

OUT_DIR = Path(__file__).resolve().parent / "cases" / "memory"
Op = InstructionKind
F32, F16, I32, I8, I4 = DType.F32, DType.F16, DType.I32, DType.I8, DType.I4
PROVENANCE = {"model": "conformance/make_memory_cases.py"}
"""``meta`` of every program here: a provenance tag, kept literal (the case files' bytes)."""


def one(op: InstructionKind, inputs: list[BufSpec], output: BufSpec | int, params: dict[str, Any]) -> (
        MegakernelProgram):
    """A one-task program of this generator (:func:`amkspec.programs.parts.one_task`)."""
    return one_task(op, inputs, output, params, meta=PROVENANCE)


Make = Callable[[bool], MegakernelProgram]
CASES: list[tuple[str, str, str, Make]] = []


def case(code: str, slug: str, description: str) -> Callable[[Make], Make]:
    def add(make: Make) -> Make:
        CASES.append((code, slug, description, make))
        return make
    return add


GEMV = GEMV_8


# -- GEMV_TILE / GEMM_TILE / DEQUANT ------------------------------------------------------------
@case("M401", "tile_past_output", "a GEMV tile writes columns [0, 16) of an output whose last dim is 8")
def _m401(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (16, 8))], res("y", (1, 8 if bad else 16)),
               {"K": 8, "N_tile": 16, "n_off": 0})


@case("M402", "tile_past_weight", "a GEMV tile reads rows [0, 16) of a weight with 8 rows")
def _m402(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8 if bad else 16, 8))], res("y", (1, 16)),
               {"K": 8, "N_tile": 16, "n_off": 0})


@case("M403", "k_mismatch", "x has K = 8 but the weight is [8, 4]")
def _m403(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 4 if bad else 8))], res("y", (1, 8)),
               {"K": 8, "N_tile": 8, "n_off": 0})


@case("M404", "k_param", "param K = 16 disagrees with x's last dim 8")
def _m404(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)),
               {**GEMV, "K": 16 if bad else 8})


@case("M405", "bias_short", "a GEMV bias has 4 entries for a tile of 8 columns")
def _m405(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8)), wt("b", (4 if bad else 8,))],
               res("y", (1, 8)), GEMV)


@case("M406", "row_mismatch", "x has 2 rows but the GEMM output has 1")
def _m406(bad: bool) -> MegakernelProgram:
    return one(Op.GEMM_TILE, [io("x", (2, 8)), wt("w", (8, 8))], res("y", (1 if bad else 2, 8)),
               {**GEMV, "M_tile": 2})


@case("M407", "packed_dtype", "qdtype 7 (int4) over a weight stored as I8")
def _m407(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("qw", (8, 8), I8 if bad else I4), wt("s", (8, 2), F16)],
               res("y", (1, 8)), {**GEMV, "qdtype": 7, "group": 4})


@case("M408", "scales_shape", "scales [8, 1] for K = 8 in groups of 4 (needs [8, 2])")
def _m408(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("qw", (8, 8), I8), wt("s", (8, 1 if bad else 2), F16)],
               res("y", (1, 8)), {**GEMV, "qdtype": 6, "group": 4})


@case("M409", "group_zero", "a quantized GEMV with group 0")
def _m409(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("qw", (8, 8), I8), wt("s", (8, 1), F16)],
               res("y", (1, 8)), {**GEMV, "qdtype": 6, "group": 0 if bad else 8})


@case("M410", "group_not_dividing", "DEQUANT groups a last dim of 8 by 3")
def _m410(bad: bool) -> MegakernelProgram:
    return one(Op.DEQUANT, [wt("q", (4, 8), I8), wt("s", (4, 2), F16)], res("y", (4, 8)),
               {"qdtype": 6, "group": 3 if bad else 4})


@case("M411", "quant_without_scales", "qdtype 6 on a GEMV with no scales input")
def _m411(bad: bool) -> MegakernelProgram:
    params = {**GEMV, "qdtype": 6} if bad else GEMV
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)), params)


@case("M412", "integer_fp_weight", "a floating-point GEMV over an I8 weight")
def _m412(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8), I8 if bad else F32)], res("y", (1, 8)), GEMV)


# the affine (scale, offset) form of amkspec's quantized formats (spec §7.9)
AFFINE = {"qdtype": 7, "group": 4, "flags": 4}


@case("M408", "affine_table_shape", "an affine GEMV (flags 4) reads scales [8, 2] as (scale, offset) pairs "
      "(needs [8, 2, 2])")
def _m408_affine(bad: bool) -> MegakernelProgram:
    table = wt("t", (8, 2) if bad else (8, 2, 2), F16)
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("qw", (8, 8), I4), table], res("y", (1, 8)),
               {**GEMV, **AFFINE})


@case("M408", "affine_dequant_table", "an affine DEQUANT of q [4, 8] in groups of 4 with 8 table entries "
      "(needs 16: a (scale, offset) pair per group)")
def _m408_affine_dequant(bad: bool) -> MegakernelProgram:
    table = wt("t", (4, 2) if bad else (4, 2, 2), F16)
    return one(Op.DEQUANT, [wt("q", (4, 8), I4), table], res("y", (4, 8)), AFFINE)


@case("M413", "affine_not_quantized", "flags 4 (AFFINE) on a floating-point GEMV")
def _m413(bad: bool) -> MegakernelProgram:
    return one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)),
               {**GEMV, "flags": 4 if bad else 0})


@case("M413", "affine_dequant_zeros", "an affine DEQUANT (flags 4) given a zeros input")
def _m413_zeros(bad: bool) -> MegakernelProgram:
    extra = [wt("z", (4, 2), F16)] if bad else []
    return one(Op.DEQUANT, [wt("q", (4, 8), I4), wt("t", (4, 2, 2), F16), *extra], res("y", (4, 8)), AFFINE)


# -- EMBED, norms, elementwise, SOFTMAX, SAMPLE_ARGMAX -----------------------------------------
@case("M420", "float_ids", "EMBED ids stored as F32")
def _m420(bad: bool) -> MegakernelProgram:
    return one(Op.EMBED, [io("ids", (1,), F32 if bad else I32), wt("table", (16, 8))], res("y", (1, 8)),
               {"hidden": 8})


@case("M421", "embed_numel", "EMBED gathers one row of 8 into an output of 16 elements")
def _m421(bad: bool) -> MegakernelProgram:
    return one(Op.EMBED, [io("ids", (1,), I32), wt("table", (16, 8))], res("y", (1, 16 if bad else 8)),
               {"hidden": 8})


@case("M422", "norm_weight", "RMSNORM weight of 4 entries for rows of 8")
def _m422(bad: bool) -> MegakernelProgram:
    return one(Op.RMSNORM, [io("x", (1, 8)), wt("w", (4 if bad else 8,))], res("y", (1, 8)),
               {"eps": 1e-6, "hidden": 8})


@case("M423", "hidden_param", "RMSNORM hidden = 16 for rows of 8")
def _m423(bad: bool) -> MegakernelProgram:
    return one(Op.RMSNORM, [io("x", (1, 8)), wt("w", (8,))], res("y", (1, 8)),
               {"eps": 1e-6, "hidden": 16 if bad else 8})


@case("M424", "numel_mismatch", "RMSNORM of 8 elements into an output of 16")
def _m424(bad: bool) -> MegakernelProgram:
    return one(Op.RMSNORM, [io("x", (1, 8)), wt("w", (8,))], res("y", (2 if bad else 1, 8)),
               {"eps": 1e-6, "hidden": 8})


@case("M425", "broadcast", "ADD of [1, 8] and [1, 4] (shapes do not broadcast)")
def _m425(bad: bool) -> MegakernelProgram:
    return one(Op.ADD, [io("a", (1, 8)), io("b", (1, 4 if bad else 8))], res("y", (1, 8)), {})


@case("M426", "device_numel", "ADD of [2, 8] and [8]: torch broadcasts, but a device reading b "
      "at the output's indices runs past its end")
def _m426(bad: bool) -> MegakernelProgram:
    return one(Op.ADD, [io("a", (2, 8)), io("b", (8,) if bad else (2, 8))], res("y", (2, 8)), {})


@case("M427", "softmax_dim", "SOFTMAX over dim 2 of a rank-2 tensor")
def _m427(bad: bool) -> MegakernelProgram:
    return one(Op.SOFTMAX, [io("x", (1, 8))], res("y", (1, 8)), {"dim": 2 if bad else 1})


@case("M428", "argmax_dtype", "SAMPLE_ARGMAX of 300 logits into an I8 output")
def _m428(bad: bool) -> MegakernelProgram:
    return one(Op.SAMPLE_ARGMAX, [io("logits", (1, 300))], res("tok", (1,), I8 if bad else I32), {})


@case("M429", "argmax_shape", "SAMPLE_ARGMAX of 2 rows into a 1-element output")
def _m429(bad: bool) -> MegakernelProgram:
    return one(Op.SAMPLE_ARGMAX, [io("logits", (2, 16))], res("tok", (1 if bad else 2,), I32), {})


# -- ATTENTION_TILE, ATTENTION_COMBINE, ROPE, KV_APPEND ----------------------------------------
ATTN = {"head_dim": 4, "kv_start": 0, "kv_len": 4, "scale": 0.5, "n_heads": 4, "n_kv_heads": 2}


def attention(q: tuple[int, ...], cache: tuple[int, ...], out: tuple[int, ...], **params: Any) -> (
        MegakernelProgram):
    return one(Op.ATTENTION_TILE, [io("q", q), kv("kcache", cache), kv("vcache", cache)], res("o", out),
               {**ATTN, **params})


@case("M430", "query_layout", "q [4, 8] read as 4 heads of head_dim 4")
def _m430(bad: bool) -> MegakernelProgram:
    return attention((4, 8 if bad else 4), (8, 2, 4), (1, 16))


@case("M431", "cache_layout", "caches [8, 4, 4] read as 2 kv heads")
def _m431(bad: bool) -> MegakernelProgram:
    return attention((4, 4), (8, 4 if bad else 2, 4), (1, 16))


@case("M432", "heads_divide", "4 query heads over 3 kv heads")
def _m432(bad: bool) -> MegakernelProgram:
    n_kv = 3 if bad else 2
    return attention((4, 4), (8, n_kv, 4), (1, 16), n_kv_heads=n_kv)


@case("M433", "window_past_cache", "an attention window [6, 10) over a cache of 8 positions")
def _m433(bad: bool) -> MegakernelProgram:
    return attention((4, 4), (8, 2, 4), (1, 16), kv_start=6 if bad else 4)


@case("M434", "attention_out_numel", "PARTIAL_WRITE attention into [4, 4] instead of [4, 6]")
def _m434(bad: bool) -> MegakernelProgram:
    return attention((4, 4), (8, 2, 4), (4, 4 if bad else 6), flags=2)


@case("M435", "partial_shape", "ATTENTION_COMBINE partials of [4, 4] for head_dim 4 (need [4, 6])")
def _m435(bad: bool) -> MegakernelProgram:
    part = (4, 4 if bad else 6)
    return one(Op.ATTENTION_COMBINE, [io("p0", part), io("p1", part)], res("o", (1, 16)),
               {"head_dim": 4, "n_heads": 4, "n_kv_heads": 2})


@case("M436", "combine_head_dim", "ATTENTION_COMBINE without head_dim")
def _m436(bad: bool) -> MegakernelProgram:
    params = {"n_heads": 4} if bad else {"n_heads": 4, "head_dim": 4}
    return one(Op.ATTENTION_COMBINE, [io("p0", (4, 6)), io("p1", (4, 6))], res("o", (1, 16)), params)


@case("M437", "rope_layout", "ROPE with an odd head_dim")
def _m437(bad: bool) -> MegakernelProgram:
    hd = 5 if bad else 4
    return one(Op.ROPE, [io("x", (2, hd)), io("pos", (1,), I32)], res("y", (2, hd)),
               {"head_dim": hd, "theta": 10000.0})


@case("M438", "rope_positions", "rank-3 ROPE over 2 slabs with 1 position")
def _m438(bad: bool) -> MegakernelProgram:
    return one(Op.ROPE, [io("x", (2, 2, 4)), io("pos", (1 if bad else 2,), I32)], res("y", (2, 2, 4)),
               {"head_dim": 4, "theta": 10000.0})


@case("M439", "kv_rows_past_cache", "KV_APPEND at pos 8 into a cache of 8 positions")
def _m439(bad: bool) -> MegakernelProgram:
    return one(Op.KV_APPEND, [io("k", (1, 2, 4)), kv("kcache", (8, 2, 4))], 1, {"pos": 8 if bad else 7})


@case("M440", "kv_new_shape", "KV_APPEND of [2, 4] (n_kv rows) into a cache row of 2 x 4")
def _m440(bad: bool) -> MegakernelProgram:
    return one(Op.KV_APPEND, [io("k", (2, 4) if bad else (1, 8)), kv("kcache", (8, 2, 4))], 1, {"pos": 0})


@case("M441", "kv_not_in_place", "KV_APPEND declares one cache as input and writes another")
def _m441(bad: bool) -> MegakernelProgram:
    out: BufSpec | int = kv("other", (8, 2, 4)) if bad else 1
    return one(Op.KV_APPEND, [io("k", (1, 8)), kv("kcache", (8, 2, 4))], out, {"pos": 0})


# -- FUSED -----------------------------------------------------------------------------------------
def fused(**edit: Any) -> MegakernelProgram:
    """``y = x @ W.T + r`` as a two-step recipe; ``edit`` replaces fields of step 0 or 1."""
    steps: list[dict[str, Any]] = [
        {"op": int(Op.GEMV_TILE), "args": [{"in": 0}, {"in": 1}], "out": 0, "params": dict(GEMV),
         "out_shape": [1, 8], "out_dtype": "float32"},
        {"op": int(Op.ADD), "args": [{"s": 0}, {"in": 2}], "out": "final", "params": {}},
    ]
    for key, value in edit.items():
        index, field = key.split("_", 1)
        steps[int(index[1:])][field] = value
    return one(Op.FUSED, [io("x", (1, 8)), wt("w", (8, 8)), io("r", (1, 8))], res("y", (1, 8)),
               {"recipe": {"steps": steps}})


@case("M450", "recipe_no_final", "a FUSED recipe whose last step writes scratch 1, not final")
def _m450(bad: bool) -> MegakernelProgram:
    return fused(s1_out=1) if bad else fused()


@case("M451", "recipe_nested_fused", "a FUSED recipe step whose op is FUSED")
def _m451(bad: bool) -> MegakernelProgram:
    return fused(s1_op=int(Op.FUSED)) if bad else fused()


@case("M452", "recipe_bad_ref", "a FUSED recipe step reading scratch 5, which no earlier step wrote")
def _m452(bad: bool) -> MegakernelProgram:
    return fused(s1_args=[{"s": 5}, {"in": 2}]) if bad else fused()


@case("M453", "recipe_step_params", "a FUSED recipe GEMV step without its required N_tile")
def _m453(bad: bool) -> MegakernelProgram:
    return fused(s0_params={"K": 8, "n_off": 0}) if bad else fused()


@case("M454", "device_pattern_inputs", "FUSED selects device pattern GEMV_ADD (flags bit 16) with 2 inputs")
def _m454(bad: bool) -> MegakernelProgram:
    step = {"op": int(Op.GEMV_TILE), "args": [{"in": 0}, {"in": 1}], "out": "final", "params": dict(GEMV)}
    return one(Op.FUSED, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)),
               {**GEMV, "flags": 1 << 16 if bad else 0, "recipe": {"steps": [step]}})


def build_cases() -> dict[str, dict[str, Any]]:
    """File name → case document, for every code: the trigger and its near miss."""
    docs: dict[str, dict[str, Any]] = {}
    for code, slug, description, make in CASES:
        for bad in (True, False):
            docs[f"{code}_{slug}{'' if bad else '_ok'}.json"] = {
                "kind": "validate",
                "description": description if bad else f"near miss of {code}: {description}, corrected",
                "rules": validate_case_rules([code]),
                "clauses": [CODES[code].clause],
                "program": to_dict(make(bad)),
                "expect": (
                    {"verdict": "rejected", "codes": [code], "absent_codes": []}
                    if bad else {"verdict": "accepted", "codes": [], "absent_codes": [code]}
                ),
            }
    return docs


def main() -> int:
    n = write_cases(OUT_DIR, build_cases(), "M4*.json")
    print(f"wrote {n} cases to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
