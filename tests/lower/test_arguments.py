"""``lower()`` refuses bad arguments with LoweringError and lowers exactly the config the knob checks
build (spec §5; docs/differences/search.md: refuse, or produce a program that validates, never
quietly reinterpret)."""

from __future__ import annotations

from typing import Any

import pytest

from amkspec.ir import TARGETS, ScheduleConfig
from amkspec.lower import LoweringError, lower
from amkspec.lower.knobs import ConfigError, check
from amkspec.proofs import validate


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pos": 1.5},
        {"pos": True},
        {"pos": "3"},
        {"B": 2.0},
        {"B": True},
        {"quant": [1, 2]},
        {"dtype": ["F32"]},
        {"config": 5},
    ],
)
def test_a_bad_argument_is_a_lowering_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LoweringError):
        lower("toy", "h100", **kwargs)


@pytest.mark.parametrize(("model", "target"), [(["toy"], "h100"), ("toy", {"a": 1})])
def test_an_unhashable_model_or_target_is_a_lowering_error(model: Any, target: Any) -> None:
    with pytest.raises(LoweringError, match="unknown"):
        lower(model, target)


@pytest.mark.parametrize("sm_map", [{"3": 5}, {3: 5.0}])
def test_a_map_the_checks_pass_is_lowered_as_checked(sm_map: dict[Any, Any]) -> None:
    config = ScheduleConfig(sm_assignment=sm_map)
    assert check(config, TARGETS["h100"]) == []
    prog = lower("toy", "h100", config)
    task = next(t for t in prog.tasks if t.id == 3)
    assert task.sm == 5 and type(task.sm) is int
    assert prog.config is not None and prog.config.sm_assignment == {3: 5}
    assert not [d for d in validate(prog).diagnostics if d.severity.name == "ERROR"]


def test_a_mapping_config_is_lowered_like_the_same_schedule_config() -> None:
    as_mapping = lower("toy", "h100", {"pipelining_depth": 3})
    assert as_mapping == lower("toy", "h100", ScheduleConfig(pipelining_depth=3))


def test_a_negative_task_id_is_refused_by_the_checks() -> None:
    config = ScheduleConfig(sm_assignment={-1: 1})
    assert [i.code for i in check(config, TARGETS["h100"])] == ["knob:type"]
    with pytest.raises(ConfigError):
        lower("toy", "h100", config)
