"""GpuTarget records and the nine built-in targets (spec §5.2)."""

from __future__ import annotations

import math

import attrs
import pytest

from amkspec.ir import TARGETS, GpuTarget

EXPECTED = {  # name: (sm_arch, SMs, smem opt-in/block, HBM GB/s, measured GB/s, fp16 TFLOPs, wddm_tdr)
    "rtx5090": (120, 82, 101376, 896.0, 731.0, 210.0, True),
    "b200": (100, 148, 232448, 8000.0, 0.0, 2250.0, False),
    "h100": (90, 132, 232448, 3350.0, 3089.0, 989.0, False),
    "h200": (90, 132, 232448, 4800.0, 0.0, 989.0, False),
    "a100": (80, 108, 166912, 1555.0, 1382.0, 312.0, False),
    "l4": (89, 58, 101376, 300.0, 0.0, 242.0, False),
    "t4": (75, 40, 65536, 320.0, 0.0, 65.0, False),
    "a10g": (86, 80, 101376, 600.0, 0.0, 125.0, False),
    "l40s": (89, 142, 101376, 864.0, 0.0, 362.0, False),
}


def test_the_nine_builtin_targets() -> None:
    assert sorted(TARGETS) == sorted(EXPECTED)
    for name, t in TARGETS.items():
        assert t.name == name
        got = (t.sm_arch, t.num_sms, t.smem_bytes_per_block_optin, t.hbm_bandwidth_gbs, t.measured_bw_gbs,
               t.fp16_tflops, t.wddm_tdr)
        assert got == EXPECTED[name]
        assert t.smem_bytes_per_block_optin <= t.smem_bytes_per_sm
        assert t.supports_cooperative


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bandwidth_bound_of_one_gigabyte(name: str) -> None:
    t = TARGETS[name]
    assert t.bandwidth_bound_us(10**9) == pytest.approx(1e6 / t.hbm_bandwidth_gbs)
    measured = t.measured_bw_gbs or t.hbm_bandwidth_gbs
    assert t.measured_bandwidth_bound_us(10**9) == pytest.approx(1e6 / measured)


def test_toy_bound_matches_the_reference() -> None:
    assert round(TARGETS["rtx5090"].bandwidth_bound_us(279296), 4) == 0.3117
    assert round(TARGETS["rtx5090"].bandwidth_bound_us(427264), 4) == 0.4769


def test_zero_bandwidth_gives_nan() -> None:
    t = attrs.evolve(TARGETS["t4"], hbm_bandwidth_gbs=0.0)
    assert math.isnan(t.bandwidth_bound_us(100))
    assert math.isnan(t.measured_bandwidth_bound_us(100))


def test_a_target_is_data() -> None:
    t = GpuTarget("mine", 90, 1, 1, 1, 1, 1, 1, 1, 1, 1000.0, 1.0)
    defaults = (t.clock_ghz, t.supports_cooperative, t.wddm_tdr, t.measured_bw_gbs, t.note)
    assert defaults == (0.0, True, False, 0.0, "")
    assert t.bandwidth_bound_us(10**6) == pytest.approx(1.0)


def test_editing_a_programs_target_never_changes_the_registry() -> None:
    mine = TARGETS["rtx5090"]
    mine.note = "edited"
    mine.extra["x"] = 1
    assert TARGETS["rtx5090"].note != "edited"
    assert TARGETS["rtx5090"].extra == {}
    TARGETS["mine"] = mine
    mine.num_sms = 1
    try:
        assert TARGETS["mine"].num_sms == 82
        assert "mine" in TARGETS and len(TARGETS) == len(EXPECTED) + 1
    finally:
        del TARGETS["mine"]
    assert sorted(TARGETS) == sorted(EXPECTED)
