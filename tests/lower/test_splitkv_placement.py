"""Where split-KV shards run (the lowering guide, "Split-KV attention"): shard ``p`` on SM ``p`` as
emitted and in compat mode; a resolved ``sm_assignment`` then places them like any other task."""

from __future__ import annotations

import pytest

from amkspec.ir import TARGETS, InstructionKind, MegakernelProgram, ScheduleConfig
from amkspec.lower import lower

SPLIT = {"attention": {"n_partitions": 4}}


def _shards(prog: MegakernelProgram) -> list[tuple[int, int, int | None]]:
    """(index in the task list, shard number, sm) of every ATTENTION_TILE."""
    return [(i, int(t.label.rsplit(".s", 1)[1]), t.sm) for i, t in enumerate(prog.tasks)
            if t.op is InstructionKind.ATTENTION_TILE]


@pytest.mark.parametrize("policy", ["round_robin", "load_balance", {14: 5}])
def test_compat_mode_keeps_shard_p_on_sm_p(policy: object) -> None:
    prog = lower("toy-2L", "rtx5090", ScheduleConfig(tiling=SPLIT, sm_assignment=policy), pos=47, compat=True)
    shards = _shards(prog)
    assert len(shards) == 6 and all(sm == p for _, p, sm in shards)


def test_round_robin_places_shards_by_their_place_in_the_list() -> None:
    prog = lower("toy-2L", "rtx5090", ScheduleConfig(tiling=SPLIT, sm_assignment="round_robin"), pos=47)
    shards = _shards(prog)
    assert all(sm == i % TARGETS["rtx5090"].num_sms for i, _, sm in shards)
    assert any(sm != p for _, p, sm in shards)


def test_an_explicit_map_moves_only_the_shards_it_names() -> None:
    plain = _shards(lower("toy-2L", "rtx5090", ScheduleConfig(tiling=SPLIT, sm_assignment={}), pos=47))
    prog = lower("toy-2L", "rtx5090", ScheduleConfig(tiling=SPLIT, sm_assignment={plain[2][0]: 9}), pos=47)
    moved = _shards(prog)
    assert moved[2][2] == 9 and plain[2][2] == 2
    assert [s for k, s in enumerate(moved) if k != 2] == [s for k, s in enumerate(plain) if k != 2]
