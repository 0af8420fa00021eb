"""The lowering reproduces the original's programs byte for byte (OPS_FACTS §9)."""

from __future__ import annotations

import gzip

import pytest

import amkspec
from amkspec.ir import TARGETS, DType, InstructionKind, ScheduleConfig
from amkspec.lower import LoweringError, lower
from tests.conftest import FIXTURES

CASES = [
    ("toy1L__default.json", "toy", 0),
    ("toy1L__default.pos1.json.gz", "toy", 1),
    ("toy1L__default.pos2.json.gz", "toy", 2),
    ("toy2L__splitkv4__pos47.json", "toy-2L", 47),
]


def _text(name: str) -> str:
    raw = (FIXTURES / name).read_bytes()
    return (gzip.decompress(raw) if name.endswith(".gz") else raw).decode()


@pytest.mark.parametrize(("name", "model", "pos"), CASES)
def test_fixture_is_reproduced_exactly(name: str, model: str, pos: int) -> None:
    text = _text(name)
    ref = amkspec.loads(text)
    assert amkspec.dumps(lower(model, ref.target, ref.config, pos=pos, compat=True)) == text


def test_builtin_target_differs_only_in_the_note() -> None:
    text = _text("toy1L__default.json")
    ref = amkspec.loads(text)
    ours = lower("toy", "rtx5090", ref.config, compat=True)
    assert ours.target is not None and ref.target is not None
    ours.target.note = ref.target.note
    assert amkspec.dumps(ours) == text


@pytest.mark.parametrize(
    ("model", "config", "tasks", "buffers", "counters", "edges"),
    [
        ("toy", "default", 27, 37, 22, 33),
        ("toy-2L", "default", 48, 65, 41, 61),
        ("toy", None, 38, None, None, None),
        ("toy-2L", None, 66, None, None, None),
    ],
)
def test_sizes_at_pos_zero(model: str, config: str | None, tasks: int, buffers: int | None,
                           counters: int | None, edges: int | None) -> None:
    cfg = ScheduleConfig(tiling={"gemv": {"N_tile": 64}}) if config else None
    prog = lower(model, "rtx5090", cfg, compat=True)
    assert len(prog.tasks) == tasks
    if buffers is not None:
        assert (len(prog.buffers), len(prog.counters), len(prog.dependency_edges())) == (
            buffers, counters, edges)
    assert prog.meta["weight_bytes"] == {"toy": 279296, "toy-2L": 427264}[model]


def test_meta_without_target_and_in_half_precision() -> None:
    prog = lower("toy", None, None, pos=5, dtype=DType.BF16)
    assert prog.meta["gpu"] == "?" and prog.meta["dtype"] == "BF16" and prog.meta["kv_len"] == 6
    floats = {b.dtype for b in prog.buffers if b.name not in ("token_id", "pos", "reshape_id0")}
    assert floats == {DType.BF16}
    gemv = next(t for t in prog.tasks if t.op is InstructionKind.GEMV_TILE)
    assert gemv.est_bytes == gemv.params["K"] * 2 * gemv.params["N_tile"]
    assert prog.pages is None and prog.config is None


def test_batched_lowering_uses_gemm_and_batched_shapes() -> None:
    prog = lower("toy", "rtx5090", ScheduleConfig(tiling={"gemv": {"N_tile": 64}}), B=2, compat=True)
    ops = {t.op for t in prog.tasks}
    assert InstructionKind.GEMM_TILE in ops and InstructionKind.GEMV_TILE not in ops
    shapes = {b.name: b.shape for b in prog.buffers}
    assert shapes["token_id"] == (2,) and shapes["logits"] == (2, 256)
    assert shapes["L0.qr"] == (2, 4, 16) and shapes["L0.kr"] == (2, 2, 16)
    assert shapes["L0.kcache"] == (2, 256, 2, 16)
    assert all(t.params["M_tile"] == 2 for t in prog.tasks if t.op is InstructionKind.GEMM_TILE)
    split = lower("toy", "rtx5090", ScheduleConfig(tiling={"attention": {"n_partitions": 4}}), pos=100, B=2)
    assert InstructionKind.ATTENTION_COMBINE not in {t.op for t in split.tasks}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "nope"}, "unknown model"),
        ({"target": "nope"}, "unknown target"),
        ({"pos": 256}, "outside"),
        ({"pos": -1}, "outside"),
        ({"B": 0}, "batch"),
        ({"dtype": DType.I8}, "cannot lower"),
        ({"config": ScheduleConfig(sm_assignment="spiral")}, "sm_assignment"),
        ({"config": ScheduleConfig(page_allocation="buddy")}, "page_allocation"),
        ({"config": ScheduleConfig(sm_assignment={999: 0})}, "task 999"),
        ({"config": ScheduleConfig(sm_assignment={0: 82})}, "SM 82"),
        ({"config": ScheduleConfig(tiling={"gemv": {"N_tile": "8"}})}, "integer"),
        ({"config": ScheduleConfig(tiling={"attention": {"n_partitions": True}})}, "integer"),
        ({"config": ScheduleConfig(tiling={"gemv": 64})}, "object"),
        ({"config": ScheduleConfig(sm_assignment={0: "x"})}, "not an SM"),
    ],
)
def test_bad_arguments_raise_lowering_error(kwargs: dict, message: str) -> None:
    args = {"model": "toy", "target": TARGETS["rtx5090"], **kwargs}
    with pytest.raises(LoweringError, match=message):
        lower(args.pop("model"), args.pop("target"), args.pop("config", None), **args)


def test_lowered_programs_match_the_json_schema() -> None:
    import jsonschema

    from amkspec.ir.schema import program_schema
    from amkspec.models import QuantSpec

    validator = jsonschema.Draft202012Validator(program_schema())
    programs = [
        lower("toy-2L", "rtx5090", ScheduleConfig(tiling={"attention": {"n_partitions": 4}}), pos=47),
        lower("toy", "t4", ScheduleConfig(sm_assignment={0: 2}, page_allocation="linear"), B=3),
        lower("toy", None, None, quant=QuantSpec(4, 32), dtype=DType.F16),
    ]
    for prog in programs:
        errors = [e.message for e in validator.iter_errors(amkspec.ir.to_dict(prog))]
        assert errors == []
        assert amkspec.loads(amkspec.dumps(prog)) == prog


def test_dtype_and_quant_by_name() -> None:
    from amkspec.models import QuantSpec

    assert lower("toy", dtype="F16").meta["dtype"] == "F16"
    by_dict = lower("toy", quant={"bits": 8, "group": 32})
    assert amkspec.dumps(by_dict) == amkspec.dumps(lower("toy", quant=QuantSpec(8, 32)))
    with pytest.raises(LoweringError, match="unknown dtype"):
        lower("toy", dtype="F64")
    with pytest.raises(LoweringError, match="bad quant"):
        lower("toy", quant={"bits": 5})
