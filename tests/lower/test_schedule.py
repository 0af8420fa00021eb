"""sm_assignment and page_allocation are consumed, and the results are safe (spec §3.2, §1.6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import amkspec
from amkspec.ir import TARGETS, BufferKind, ScheduleConfig
from amkspec.lower import lower
from amkspec.lower.cost import predicted_latency_us, task_us
from amkspec.lower.knobs import ConfigError
from amkspec.lower.sm_assign import assign_sms
from tests.conftest import FIXTURES
from tests.lower.checks import page_clobbers, sm_queue_violations

configs = st.builds(
    ScheduleConfig,
    tiling=st.sampled_from([{}, {"gemv": {"N_tile": 8}}, {"gemv": {"N_tile": 64}},
                            {"attention": {"n_partitions": 4}},
                            {"gemv": {"N_tile": 16}, "attention": {"n_partitions": 2}}]),
    sm_assignment=st.sampled_from(["round_robin", "load_balance"]),
    page_allocation=st.sampled_from(["none", "linear", "graph_color"]),
)


@given(configs, st.sampled_from(["toy", "toy-2L"]), st.integers(0, 120), st.sampled_from(["rtx5090", "t4"]))
def test_every_resolved_schedule_validates(cfg: ScheduleConfig, model: str, pos: int, target: str) -> None:
    prog = lower(model, target, cfg, pos=pos)
    assert all(t.sm is not None and 0 <= t.sm < TARGETS[target].num_sms for t in prog.tasks)
    assert sm_queue_violations(prog) == []
    assert (prog.pages is None) == (cfg.page_allocation == "none")
    if prog.pages is not None:
        assert page_clobbers(prog) == []
    result = amkspec.validate(prog)
    assert result.ok, result.report() if hasattr(result, "report") else result


def test_round_robin_and_explicit_maps() -> None:
    prog = lower("toy", "t4", ScheduleConfig(sm_assignment="round_robin", page_allocation="none"))
    assert [t.sm for t in prog.tasks] == [i % 40 for i in range(len(prog.tasks))]
    explicit = lower("toy", "t4", ScheduleConfig(sm_assignment={0: 3, 5: 1}, page_allocation="none"))
    assert explicit.tasks[0].sm == 3 and explicit.tasks[5].sm == 1
    assert {t.sm for t in explicit.tasks[1:5]} == {None}
    assert amkspec.validate(explicit).ok


def test_named_policies_need_a_target() -> None:
    """Issue 12 item 6: a named policy without a target is refused, not silently left unplaced."""
    with pytest.raises(ConfigError, match="needs a target"):
        lower("toy", None, ScheduleConfig(sm_assignment="load_balance"))
    compat = lower("toy", None, ScheduleConfig(sm_assignment="load_balance"), compat=True)
    assert {t.sm for t in compat.tasks} == {None}
    explicit = lower("toy", None, ScheduleConfig(sm_assignment={0: 1}))
    assert explicit.tasks[0].sm == 1


def test_load_balance_is_no_worse_than_one_sm() -> None:
    n = len(lower("toy-2L", "rtx5090", ScheduleConfig(), compat=True).tasks)
    one = lower("toy-2L", "rtx5090", ScheduleConfig(sm_assignment=dict.fromkeys(range(n), 0)))
    balanced = lower("toy-2L", "rtx5090", ScheduleConfig(sm_assignment="load_balance"))
    serial = sum(task_us(t, one, TARGETS["rtx5090"]) for t in one.tasks)
    assert predicted_latency_us(one) == pytest.approx(serial)
    assert predicted_latency_us(balanced) < serial / 2


@pytest.mark.parametrize("model", ["toy", "toy-2L"])
def test_graph_colouring_saves_scratch(model: str) -> None:
    sizes = {}
    for policy in ("none", "linear", "graph_color"):
        prog = lower(model, "rtx5090", ScheduleConfig(page_allocation=policy))
        sizes[policy] = prog.total_scratch_bytes()
        assert amkspec.validate(prog).ok
    activations = sum(b.nbytes for b in prog.buffers if b.kind is BufferKind.ACTIVATION)
    assert sizes["none"] == sizes["linear"] == activations
    assert sizes["graph_color"] < sizes["none"] / 2


def test_linear_pages_carry_live_ranges() -> None:
    prog = lower("toy", "rtx5090", ScheduleConfig(page_allocation="linear"))
    assert prog.pages is not None
    byid = prog.buffer_by_id()
    for bid, pid in prog.pages.buffer_to_page.items():
        page = prog.pages.pages[pid]
        users = [t.id for t in prog.tasks if bid in t.inputs + t.outputs]
        assert (page.live_start, page.live_end) == (min(users), max(users))
        assert page.nbytes == byid[bid].nbytes


def test_cost_model_matches_the_original_predictions() -> None:
    ref = amkspec.load(FIXTURES / "toy1L__default.json")
    assert predicted_latency_us(ref) == pytest.approx(24.3146, abs=1e-4)
    two = lower("toy-2L", ref.target, ref.config, compat=True)
    assert predicted_latency_us(two) == pytest.approx(44.0673, abs=1e-4)
    auto = lower("toy", ref.target, ScheduleConfig(), compat=True)
    assert predicted_latency_us(auto) == pytest.approx(24.286, abs=1e-3)
    with pytest.raises(ValueError, match="target"):
        predicted_latency_us(lower("toy"))


def test_medium_schedule_validates_and_saves_scratch() -> None:
    config = ScheduleConfig(sm_assignment="load_balance", page_allocation="graph_color")
    prog = lower("medium", "h100", config, pos=7)
    assert amkspec.validate(prog).ok
    assert sm_queue_violations(prog) == []
    plain = lower("medium", "h100", ScheduleConfig(page_allocation="none"), pos=7)
    assert prog.total_scratch_bytes() < plain.total_scratch_bytes() / 4


def test_an_unordered_page_sharing_is_rejected() -> None:
    prog = lower("toy", "rtx5090", ScheduleConfig(page_allocation="graph_color"))
    assert prog.pages is not None
    one = max(prog.pages.pages, key=lambda p: p.nbytes)
    prog.pages.buffer_to_page = dict.fromkeys(prog.pages.buffer_to_page, one.id)
    one.nbytes = max(b.nbytes for b in prog.buffers if b.kind is BufferKind.ACTIVATION)
    assert page_clobbers(prog) != []
    assert not amkspec.validate(prog).ok


def test_assignment_refuses_a_non_topological_task_list() -> None:
    prog = lower("toy", "rtx5090", ScheduleConfig(page_allocation="none"), compat=True)
    prog.tasks.reverse()
    with pytest.raises(ValueError, match="before"):
        assign_sms(prog, "round_robin")
