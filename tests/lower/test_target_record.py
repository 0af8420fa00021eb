"""A GpuTarget record given to ``lower()`` must have ``num_sms`` an int ≥ 1 (spec §5.2): otherwise a
LoweringError, whatever the config, instead of a crash or a program ``validate()`` rejects."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from amkspec.ir import TARGETS, ScheduleConfig
from amkspec.lower import LoweringError, lower, resolve_target
from amkspec.proofs import validate

CONFIGS = [
    None,
    ScheduleConfig(),
    ScheduleConfig(sm_assignment="round_robin"),
    ScheduleConfig(tiling={"attention": {"n_partitions": 4}}, sm_assignment={0: 0}),
]


@pytest.mark.parametrize("num_sms", [0, -1, True, 2.5, "4", None, 2**70])
@pytest.mark.parametrize("config", CONFIGS)
def test_an_unusable_num_sms_is_a_lowering_error(num_sms: Any, config: ScheduleConfig | None) -> None:
    target = attrs.evolve(TARGETS["t4"], num_sms=num_sms)
    if num_sms == 2**70:  # large but a positive int: usable
        assert validate(lower("toy", target, config, pos=100)).ok
        return
    with pytest.raises(LoweringError, match="num_sms"):
        lower("toy", target, config, pos=100)
    with pytest.raises(LoweringError, match="num_sms"):
        resolve_target(target)


@pytest.mark.parametrize("config", CONFIGS)
def test_one_sm_is_enough(config: ScheduleConfig | None) -> None:
    target = attrs.evolve(TARGETS["t4"], num_sms=1)
    prog = lower("toy-2L", target, config, pos=100)
    assert validate(prog).ok
    assert {t.sm for t in prog.tasks} <= {None, 0}


def test_load_balance_on_a_huge_target_places_as_on_one_with_an_sm_per_task() -> None:
    """No task can land past SM len(tasks) - 1, so a huge SM count changes nothing (and allocates nothing)."""
    config = ScheduleConfig(sm_assignment="load_balance")
    placed = []
    for num_sms in (2**70, 200):
        prog = lower("toy-2L", attrs.evolve(TARGETS["t4"], num_sms=num_sms), config, pos=40)
        assert len(prog.tasks) <= 200
        placed.append([t.sm for t in prog.tasks])
    assert placed[0] == placed[1] and len(set(placed[0])) > 1
