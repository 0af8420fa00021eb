"""Per-opcode shape rules of the memory-safety family beyond the conformance cases (spec §7)."""

from __future__ import annotations

from typing import Any

import pytest

from amkspec.ir import (
    OP_REGISTRY,
    Buffer,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    ScheduleConfig,
    load,
)
from amkspec.programs.parts import GEMV_8, BufSpec, io, kv, one_task, res, wt
from amkspec.proofs import validate
from amkspec.proofs.diagnostics import CODES, Family
from amkspec.proofs.memory import SHAPE_RULES, check_memory_safety
from amkspec.proofs.shapes.pointwise import broadcast
from tests.conftest import FIXTURES

Op = InstructionKind
F32, I32, I8, I4, F16 = DType.F32, DType.I32, DType.I8, DType.I4, DType.F16


def one(op: InstructionKind, inputs: list[BufSpec], output: BufSpec | int, params: dict[str, Any]
        ) -> MegakernelProgram:
    return one_task(op, inputs, output, params, label="t")


def codes(prog: MegakernelProgram) -> list[str]:
    return [d.code for d in check_memory_safety(prog)]


GEMV = GEMV_8
ATTN = {"head_dim": 4, "kv_start": 0, "kv_len": 4, "scale": 0.5, "n_heads": 4, "n_kv_heads": 2}


@pytest.mark.parametrize(
    "name",
    [
        "toy1L__default.json",
        "toy2L__splitkv4__pos47.json",
        "toy1L__default.pos1.json.gz",
        "toy1L__default.pos2.json.gz",
    ],
)
def test_programs_of_the_original_lowering_pass(name: str) -> None:
    assert check_memory_safety(load(FIXTURES / name)) == []


@pytest.mark.parametrize(
    ("B", "quant", "parts", "pos"),
    [
        (1, None, 1, 0),
        (3, None, 1, 5),
        (1, None, 4, 47),
        (1, 4, 1, 3),
        (1, 8, 1, 3),
    ],
)
def test_programs_of_our_lowering_pass(B: int, quant: int | None, parts: int, pos: int) -> None:
    from amkspec.lower import lower
    from amkspec.models import QuantSpec

    config = ScheduleConfig(tiling={"gemv": {"N_tile": 48}, "attention": {"n_partitions": parts}})
    spec = QuantSpec(bits=quant, group=32) if quant else None
    assert check_memory_safety(lower("toy-2L", "h100", config, pos=pos, B=B, quant=spec)) == []


def test_every_opcode_has_rules_and_every_rule_code_is_a_memory_code() -> None:
    assert set(SHAPE_RULES) == set(OP_REGISTRY)
    memory = {c for c, info in CODES.items() if info.family is Family.MEMORY}
    used = {r.code for rules in SHAPE_RULES.values() for r in rules if r.code in CODES}
    assert used == memory


def test_message_names_task_buffer_and_numbers() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 8))
    w = b.new_buffer("w", BufferKind.WEIGHT, F32, (128, 8))
    y = b.new_buffer("L0.o", BufferKind.IO_OUTPUT, F32, (1, 64))
    b.add_task(Op.GEMV_TILE, [x, w], [y], params={"K": 8, "N_tile": 64, "n_off": 64}, label="L0.o_proj[t1]")
    [found] = check_memory_safety(b.build())
    assert found.code == "M401"
    assert found.message == (
        "task 0:L0.o_proj[t1] writes columns [64, 128) of buffer 2:L0.o whose last dim is 64"
    )
    assert found.tasks == (0,) and found.buffers == (y,)


# -- GEMV / GEMM ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({**GEMV, "n_off": -1}, "M401"),
        ({**GEMV, "N_tile": 0}, "M401"),
        ({**GEMV, "n_off": 4, "N_tile": 4}, None),
        ({"K": 8}, None),  # N_tile defaults to W's rows, n_off to 0
    ],
)
def test_gemv_tile_bounds(params: dict[str, Any], code: str | None) -> None:
    prog = one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)), params)
    assert codes(prog) == ([code] if code else [])


def test_gemm_row_tile_inside_output() -> None:
    ins = [io("x", (2, 8)), wt("w", (8, 8))]
    assert codes(one(Op.GEMM_TILE, ins, res("y", (2, 8)), {**GEMV, "M_tile": 2, "m_off": 0})) == []
    assert codes(one(Op.GEMM_TILE, ins, res("y", (2, 8)), {**GEMV, "M_tile": 2, "m_off": 1})) == ["M401"]


def test_quantized_gemv_int4_with_groups_passes() -> None:
    # K = 10, group 4 -> 3 groups; the packed weight keeps its logical [N, K] shape
    prog = one(
        Op.GEMV_TILE,
        [io("x", (1, 10)), wt("qw", (8, 10), I4), wt("s", (8, 3), F16)],
        res("y", (1, 8)),
        {"K": 10, "N_tile": 4, "n_off": 4, "qdtype": 7, "group": 4},
    )
    assert codes(prog) == []


def test_quantized_gemv_tile_defaults_to_the_scales_rows() -> None:
    prog = one(
        Op.GEMV_TILE,
        [io("x", (1, 8)), wt("qw", (8, 8), I8), wt("s", (8, 1), F16)],
        res("y", (1, 4)),
        {"K": 8, "qdtype": 6, "group": 8},
    )
    assert codes(prog) == ["M401"]


@pytest.mark.parametrize(("qdtype", "dtype"), [(7, I4), (6, I8)])
def test_affine_quantized_gemv_reads_a_table_of_pairs(qdtype: int, dtype: DType) -> None:
    def prog(table: tuple[int, ...], flags: int = 4, k: int = 64) -> MegakernelProgram:
        ins = [io("x", (1, k)), wt("qw", (8, k), dtype), wt("t", table, F16)]
        params = {"K": k, "N_tile": 4, "n_off": 4, "qdtype": qdtype, "group": 32, "flags": flags}
        return one(Op.GEMV_TILE, ins, res("y", (1, 8)), params)

    assert codes(prog((8, 2, 2))) == []
    assert codes(prog((8, 3, 2), k=80)) == []  # ceil(80 / 32) = 3 groups
    assert codes(prog((8, 2))) == ["M408"]  # a symmetric table under flags AFFINE
    assert codes(prog((8, 2, 2), flags=0)) == ["M408"]  # a table of pairs without the flag
    assert codes(prog((8, 2, 3))) == ["M408"]
    assert codes(prog((4, 2, 2))) == ["M408"]  # fewer rows than the weight
    assert codes(prog((8, 2, 2), flags=4 | 2)) == []  # other bits are not the quantized path's


def test_affine_flag_needs_the_quantized_path_and_no_zeros() -> None:
    fp = one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8))], res("y", (1, 8)), {**GEMV, "flags": 4})
    assert codes(fp) == ["M413"]
    zeros = one(Op.DEQUANT, [wt("q", (4, 8), I4), wt("t", (4, 2, 2), F16), wt("z", (4, 2), F16)],
                res("y", (4, 8)), {"qdtype": 7, "group": 4, "flags": 4})
    assert codes(zeros) == ["M413"]
    pairs = one(Op.DEQUANT, [wt("q", (4, 8), I4), wt("t", (4, 4), F16)], res("y", (4, 8)),
                {"qdtype": 7, "group": 4, "flags": 4})
    assert codes(pairs) == []  # 16 entries: the semantics view them as [4, 2, 2]


def test_bias_must_be_one_dimensional() -> None:
    prog = one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8)), wt("b", (1, 8))], res("y", (1, 8)), GEMV)
    assert codes(prog) == ["M405"]


def test_weight_must_be_rank_two() -> None:
    prog = one(Op.GEMV_TILE, [io("x", (1, 8)), wt("w", (8, 8, 1))], res("y", (1, 8)), GEMV)
    assert codes(prog) == ["M403"]


def test_dequant_rules() -> None:
    def prog(scales: tuple[int, ...], out: tuple[int, ...]) -> MegakernelProgram:
        ins = [wt("q", (4, 8), I8), wt("s", scales, F16)]
        return one(Op.DEQUANT, ins, res("y", out), {"qdtype": 6, "group": 4})

    assert codes(prog((4, 2), (4, 8))) == []
    assert codes(prog((4, 1), (4, 8))) == ["M408"]
    assert codes(prog((4, 2), (4, 9))) == ["M424"]


# -- elementwise, norms, embed, argmax -------------------------------------------------------------
@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([(1, 8), (8,)], (1, 8)),
        ([(2, 1), (1, 3)], (2, 3)),
        ([(), (4,)], (4,)),
        ([(2, 8), (3, 8)], None),
        ([], ()),
    ],
)
def test_broadcast_follows_torch(shapes: list[tuple[int, ...]], expected: tuple[int, ...] | None) -> None:
    assert broadcast(shapes) == expected


def test_elementwise_output_must_be_the_broadcast_shape() -> None:
    assert codes(one(Op.MUL, [io("a", (2, 8)), io("b", (8,))], res("y", (2, 8)), {})) == []
    assert codes(one(Op.MUL, [io("a", (1, 8))], res("y", (2, 8)), {})) == []  # torch copy_ replicates
    assert codes(one(Op.MUL, [io("a", (3, 8))], res("y", (2, 8)), {})) == ["M425"]
    assert codes(one(Op.MUL, [io("a", (2, 8))], res("y", (1, 8)), {})) == ["M425"]
    assert codes(one(Op.GELU, [io("a", (1, 8))], res("y", (8,)), {})) == ["M425"]
    shards = [io("a", (8,)), io("b", (8,)), io("c", (4,))]
    assert codes(one(Op.ALLREDUCE_SHARD, shards, res("y", (8,)), {})) == ["M425"]


def test_copy_broadcasts_into_its_destination_but_a_device_needs_equal_numel() -> None:
    assert codes(one(Op.COPY, [io("a", (8,))], res("y", (1, 8)), {})) == []
    assert codes(one(Op.COPY, [io("a", (1, 8))], res("y", (2, 8)), {})) == ["M426"]
    assert codes(one(Op.COPY, [io("a", (1, 8))], res("y", (4, 2)), {})) == ["M425"]


def test_layernorm_weight_and_bias_are_exactly_hidden() -> None:
    def prog(bias: tuple[int, ...]) -> MegakernelProgram:
        ins = [io("x", (2, 8)), wt("w", (8,)), wt("b", bias)]
        return one(Op.LAYERNORM, ins, res("y", (2, 8)), {"eps": 1e-5, "hidden": 8})

    assert codes(prog((8,))) == []
    assert codes(prog((1, 8))) == ["M422"]


def test_norm_output_keeps_the_row_length() -> None:
    prog = one(Op.RMSNORM, [io("x", (2, 8)), wt("w", (8,))], res("y", (4, 4)), {"eps": 1e-6, "hidden": 8})
    assert codes(prog) == ["M424"]


def test_embed_as_reshape_bridge() -> None:
    prog = one(Op.EMBED, [io("rid", (1,), I32), io("q", (1, 64))], res("heads", (4, 16)), {"hidden": 16})
    assert codes(prog) == []


def test_argmax_dtype_width() -> None:
    assert codes(one(Op.SAMPLE_ARGMAX, [io("l", (1, 100))], res("t", (1,), I8), {})) == []
    assert codes(one(Op.SAMPLE_ARGMAX, [io("l", (1, 100))], res("t", (1,), F32), {})) == ["M428"]
    assert codes(one(Op.SAMPLE_ARGMAX, [io("l", (1, 0))], res("t", (1,), I32), {})) == ["M429"]


def test_softmax_default_dim_and_negative_dim() -> None:
    assert codes(one(Op.SOFTMAX, [io("x", (1, 8))], res("y", (1, 8)), {})) == []
    assert codes(one(Op.SOFTMAX, [io("x", (1, 8))], res("y", (1, 8)), {"dim": -3})) == ["M427"]


# -- attention, rope, kv -------------------------------------------------------------------------
def attention(
    q: tuple[int, ...], cache: tuple[int, ...], out: tuple[int, ...], **params: Any
) -> MegakernelProgram:
    ins = [io("q", q), kv("k", cache), kv("v", cache)]
    return one(Op.ATTENTION_TILE, ins, res("o", out), {**ATTN, **params})


def test_batched_attention_layout() -> None:
    assert codes(attention((3, 4, 4), (3, 8, 2, 4), (3, 16))) == []
    assert codes(attention((3, 4, 4), (2, 8, 2, 4), (3, 16))) == ["M431"]
    assert codes(attention((3, 4, 4), (8, 2, 4), (3, 16))) == ["M431"]
    # the batched branch ignores PARTIAL_WRITE
    assert codes(attention((3, 4, 4), (3, 8, 2, 4), (3, 16), flags=2)) == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"kv_start": -1}, "M433"),
        ({"kv_len": -1}, "M433"),
        ({"kv_start": 0, "kv_len": 0}, None),
        ({"kv_start": 8, "kv_len": 0}, None),
        ({"n_kv_heads": 0}, "M432"),
        ({"head_dim": 0}, "M430"),
    ],
)
def test_attention_params(params: dict[str, Any], code: str | None) -> None:
    assert codes(attention((4, 4), (8, 2, 4), (1, 16), **params)) == ([code] if code else [])


def test_attention_defaults_kv_len_to_the_whole_cache() -> None:
    ins = [io("q", (4, 4)), kv("k", (8, 2, 4)), kv("v", (8, 2, 4))]
    prog = one(
        Op.ATTENTION_TILE,
        ins,
        res("o", (1, 16)),
        {"head_dim": 4, "kv_start": 1, "scale": 0.5, "n_heads": 4, "n_kv_heads": 2},
    )
    assert codes(prog) == ["M433"]


def test_combine_output_numel() -> None:
    prog = one(Op.ATTENTION_COMBINE, [io("p0", (4, 6)), io("p1", (4, 6))], res("o", (1, 8)), {"head_dim": 4})
    assert codes(prog) == ["M434"]


def test_rope_rank_two_uses_first_position() -> None:
    def prog(positions: tuple[int, ...], dtype: DType) -> MegakernelProgram:
        ins = [io("x", (4, 8)), io("pos", positions, dtype)]
        return one(Op.ROPE, ins, res("y", (4, 8)), {"head_dim": 8, "theta": 1e4})

    assert codes(prog((1,), I32)) == []
    assert codes(prog((0,), I32)) == ["M438"]
    assert codes(prog((1,), F32)) == ["M420"]


def test_kv_append_rank_four() -> None:
    def prog(new: tuple[int, ...], pos: int) -> MegakernelProgram:
        return one(Op.KV_APPEND, [io("k", new), kv("c", (2, 8, 2, 4))], 1, {"pos": pos})

    assert codes(prog((2, 2, 4), 7)) == []
    assert codes(prog((2, 8), 0)) == []
    assert codes(prog((1, 16), 0)) == ["M440"]
    assert codes(prog((2, 8), 8)) == ["M439"]
    assert codes(prog((2, 8), -1)) == ["M439"]


def test_kv_append_several_rows() -> None:
    prog = one(Op.KV_APPEND, [io("k", (3, 2, 4)), kv("c", (8, 2, 4))], 1, {"pos": 6})
    assert codes(prog) == ["M439"]


# -- FUSED ------------------------------------------------------------------------------------------
def fused(steps: Any, n_inputs: int = 3) -> MegakernelProgram:
    ins = [io("x", (1, 8)), wt("w", (8, 8)), io("r", (1, 8))][:n_inputs]
    return one(Op.FUSED, ins, res("y", (1, 8)), {"recipe": {"steps": steps}})


GEMV_STEP = {"op": 5, "args": [{"in": 0}, {"in": 1}], "out": 0, "params": GEMV, "out_shape": [1, 8]}
ADD_STEP = {"op": 11, "args": [{"s": 0}, {"in": 2}], "out": "final"}


def test_fused_steps_are_checked_with_their_op_rules() -> None:
    assert codes(fused([GEMV_STEP, ADD_STEP])) == []
    narrow = {**GEMV_STEP, "out_shape": [1, 4]}
    found = check_memory_safety(fused([narrow, ADD_STEP]))
    assert [d.code for d in found] == ["M401", "M425"]
    assert "recipe step 0 (GEMV_TILE)" in found[0].message and "scratch 0" in found[0].message


def test_fused_scratch_defaults_to_the_first_arg_shape() -> None:
    step = {"op": 12, "args": [{"in": 0}], "out": 3, "params": {"scale": 2.0}}
    final = {"op": 11, "args": [{"s": 3}, {"in": 2}], "out": -1}
    assert codes(fused([step, final])) == []


@pytest.mark.parametrize(
    ("recipe", "code"),
    [
        (None, "M450"),
        ({"steps": []}, "M450"),
        ({"steps": [[]]}, "M450"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "out_dtype": "float8"}]}, "M450"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "out_dtype": {}}]}, "M450"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "out": True}]}, "M450"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "out_shape": [-1]}]}, "M450"),
        ({"steps": [{"op": 12, "args": [], "out": 0, "params": {}}, ADD_STEP]}, "M451"),
        ({"steps": [{**ADD_STEP, "op": 99}]}, "M451"),
        ({"steps": [{**ADD_STEP, "op": 0}]}, "M451"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 3}]}]}, "M452"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2, "s": 0}]}]}, "M452"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "params": []}]}, "M453"),
        ({"steps": [{**ADD_STEP, "args": [{"in": 0}, {"in": 2}], "params": {"dim": 1.5}}]}, "M453"),
    ],
)
def test_malformed_recipes(recipe: Any, code: str) -> None:
    prog = one(
        Op.FUSED, [io("x", (1, 8)), wt("w", (8, 8)), io("r", (1, 8))], res("y", (1, 8)), {"recipe": recipe}
    )
    assert code in codes(prog)
    assert "S199" not in validate(prog).codes  # no check (footprints included) fails internally


# -- robustness ------------------------------------------------------------------------------------
def test_broken_structure_is_left_to_the_structure_checks() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, F32, (1, 8))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, F32, (1, 4))
    b.add_task(Op.GEMV_TILE, [x, 99], [y], params=GEMV)  # dangling weight id
    b.add_task(Op.ADD, [x], [y])  # wrong arity
    b.add_task(Op.GEMV_TILE, [x, y], [y], params={**GEMV, "n_off": True, "N_tile": 2.0})  # ill-typed params
    prog = b.build()
    prog.buffers.append(Buffer(7, "z", BufferKind.IO_INPUT, F32, (-1, 8)))
    prog.tasks[1].inputs = [x, 7]  # malformed shape
    assert codes(prog) == ["M403"]  # only the rule that needs no ill-typed param


def test_buffers_resolve_by_id_first_occurrence_wins() -> None:
    prog = one(Op.ADD, [io("a", (1, 8)), io("b", (1, 8))], res("y", (1, 8)), {})
    for i, buf in enumerate(reversed(prog.buffers)):
        buf.id = 10 + i  # y=10, b=11, a=12: ids are not positions
    prog.tasks[0].inputs, prog.tasks[0].outputs = [12, 11], [10]
    prog.buffers.append(Buffer(12, "dup", BufferKind.IO_INPUT, F32, (3,)))
    assert codes(prog) == []


def test_fused_device_pattern_gemv_add_checks_the_task_operands() -> None:
    step = {"op": 5, "args": [{"in": 0}, {"in": 1}], "out": "final", "params": GEMV}

    def prog(residual: tuple[int, ...], n_tile: int) -> MegakernelProgram:
        ins = [io("x", (1, 8)), wt("w", (8, 8)), io("r", residual)]
        params = {**GEMV, "N_tile": n_tile, "flags": 1 << 16, "recipe": {"steps": [step]}}
        return one(Op.FUSED, ins, res("y", (1, 8)), params)

    assert codes(prog((1, 8), 8)) == []
    assert codes(prog((4,), 8)) == ["M454"]
    found = check_memory_safety(prog((1, 8), 16))
    assert [d.code for d in found] == ["M401"] and "device pattern GEMV_ADD" in found[0].message
