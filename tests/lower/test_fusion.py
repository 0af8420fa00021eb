"""``fusion_grouping`` lowered into untiled FUSED tasks (spec §5, §7; OPS_FACTS §3.19)."""

from __future__ import annotations

import attrs
import pytest
import torch

from amkspec import validate
from amkspec.ir import DType, InstructionKind, ScheduleConfig
from amkspec.lower import lower
from amkspec.lower.cost import predicted_latency_us
from amkspec.lower.decode import greedy_decode
from amkspec.lower.knobs import (
    DOWN_RESIDUAL,
    FUSION_GROUPS,
    GATE_UP_SILU,
    O_RESIDUAL,
    ConfigError,
    default_config,
)
from amkspec.models import TOY_2L, QuantSpec, make_weights
from amkspec.search import evaluate
from amkspec.vm import ReferenceVM

pytestmark = pytest.mark.numerics

W2 = make_weights(TOY_2L)
Op = InstructionKind

CHOICES = {"gate_up_silu": (GATE_UP_SILU,), "o_residual": (O_RESIDUAL,), "down_residual": (DOWN_RESIDUAL,),
           "all": FUSION_GROUPS}


def fused(groups: tuple[tuple[str, ...], ...], **tiling: dict[str, int]) -> ScheduleConfig:
    base = default_config()
    return attrs.evolve(base, fusion_grouping=[list(g) for g in groups], tiling={**base.tiling, **tiling})


@pytest.mark.parametrize("model", ["toy", "toy-2L"])
@pytest.mark.parametrize("dtype", [DType.F32, DType.F16, DType.BF16], ids=lambda d: d.name)
def test_fused_decode_agrees_with_eager_over_several_steps(model: str, dtype: DType) -> None:
    run = greedy_decode(model, [3, 141], 3, config=fused(FUSION_GROUPS), target="h100", dtype=dtype)
    assert [s.pos for s in run.steps] == [0, 1, 2, 3]
    assert run.agree, [s.check for s in run.steps]
    assert all(s.vm_next == s.eager_next for s in run.steps)


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_each_group_is_bit_identical_to_the_unfused_program(name: str) -> None:
    feed = {"token_id": torch.tensor([7], dtype=torch.int32), "pos": torch.tensor([0], dtype=torch.int32),
            "reshape_id0": torch.tensor([0], dtype=torch.int32)}
    for dtype in (DType.F32, DType.BF16):
        plain = ReferenceVM(lower("toy-2L", "h100", default_config(), dtype=dtype)).run(W2, feed)
        one = ReferenceVM(lower("toy-2L", "h100", fused(CHOICES[name]), dtype=dtype)).run(W2, feed)
        for key in ("logits", "L1.kcache", "L1.vcache"):
            assert torch.equal(plain[key], one[key]), (name, dtype, key)


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_groups_become_one_untiled_fused_task_per_layer(name: str) -> None:
    groups = CHOICES[name]
    prog = lower("toy-2L", "h100", fused(groups, gemv={"N_tile": 16}))
    result = validate(prog)
    assert result.ok, [str(d) for d in result.diagnostics]
    fused_tasks = [t for t in prog.tasks if t.op is Op.FUSED]
    assert len(fused_tasks) == len(groups) * TOY_2L.n_layers
    labels = " ".join(t.label for t in prog.tasks if t.op is not Op.FUSED)
    if GATE_UP_SILU in groups:
        assert "gate_proj" not in labels and "swiglu" not in labels
    if O_RESIDUAL in groups:
        assert "attn_residual[" not in labels and ".o_proj[" not in labels
    for task in fused_tasks:
        steps = task.params["recipe"]["steps"]
        assert steps[-1]["out"] == "final" and all(s["out"] == j for j, s in enumerate(steps[:-1]))
        projections = [s for s in steps if s["op"] == int(Op.GEMV_TILE)]
        assert projections and all(s["params"]["n_off"] == 0 for s in projections)
        assert all(s["params"]["N_tile"] == s["out_shape"][1] for s in projections)  # untiled
        assert len(task.outputs) == 1 and len(task.inputs) <= 8


def test_fused_cost_is_the_sum_of_its_steps_and_one_overhead() -> None:
    plain = lower("toy-2L", "h100", default_config())
    prog = lower("toy-2L", "h100", fused(FUSION_GROUPS))
    replaced = ("o_proj", "attn_residual", "gate_proj", "up_proj", "swiglu", "down_proj", "mlp_residual")
    gone = [t for t in plain.tasks if any(r in t.label for r in replaced)]
    new = [t for t in prog.tasks if t.op is Op.FUSED]
    assert sum(t.est_bytes for t in new) == sum(t.est_bytes for t in gone)
    assert sum(t.est_flops for t in new) == sum(t.est_flops for t in gone)
    assert len(new) == 3 * TOY_2L.n_layers < len(gone)
    assert predicted_latency_us(prog) < 0.99 * predicted_latency_us(plain)


def test_evaluate_keeps_the_fused_latency_above_the_bandwidth_floor() -> None:
    for groups in CHOICES.values():
        doc = {"tiling": {"gemv": {"N_tile": 64}}, "fusion_grouping": [list(g) for g in groups]}
        v = evaluate("toy-2L", "h100", doc)
        assert v.valid and v.correct and v.latency_us is not None and v.bound_us is not None
        assert v.latency_us >= v.bound_us


def test_fusion_with_quantized_weights_and_batches_agrees_with_eager() -> None:
    run = greedy_decode("toy-2L", [3, 141], 2, config=fused(FUSION_GROUPS), target="h100",
                        quant=QuantSpec(8, 32))
    assert run.agree, [s.check for s in run.steps]
    run = greedy_decode("toy-2L", [[3, 141], [9, 2]], 2, config=fused(FUSION_GROUPS), target="h100")
    assert run.agree, [s.check for s in run.steps]
    assert any(t.op is Op.FUSED for t in lower("toy-2L", "h100", fused(FUSION_GROUPS), B=2).tasks)


@pytest.mark.parametrize("bad", [[["gate", "up"]], [["up", "gate", "silu"]], [["rmsnorm", "gemv"]],
                                 [["gate", "up", "silu"], ["gate", "up", "silu"]], [["o", "residual", "x"]]])
def test_unsupported_groups_are_refused_naming_the_supported_ones(bad: list[list[str]]) -> None:
    with pytest.raises(ConfigError) as err:
        lower("toy", "h100", ScheduleConfig(fusion_grouping=bad))
    assert "fusion_grouping[" in str(err.value)
    assert all(i.path.startswith("fusion_grouping") for i in err.value.issues)


def test_compat_lowering_only_records_the_groups() -> None:
    cfg = fused(FUSION_GROUPS)
    prog = lower("toy", "h100", cfg, compat=True)
    assert not any(t.op is Op.FUSED for t in prog.tasks)
    assert prog.config is not None and prog.config.fusion_grouping == cfg.fusion_grouping
