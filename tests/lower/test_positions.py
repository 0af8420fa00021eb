"""Moving a lowered step to another position (amkspec.lower.positions) and decoding without lowering
or building a VM per token (amkspec.lower.decode.Generation)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amkspec
from amkspec.ir import MegakernelProgram
from amkspec.lower import lower
from amkspec.lower.decode import greedy_decode
from amkspec.lower.positions import at_position
from amkspec.vm import ReferenceVM

CONFIGS = {
    "none": (None, None),
    "tiles-16-round-robin": ({"tiling": {"gemv": {"N_tile": 16}}, "sm_assignment": "round_robin"}, "h100"),
    "fused-coarse": ({"tiling": {"gemv": {"N_tile": 65536}}, "sm_assignment": {},
                      "fusion_grouping": [["gate", "up", "silu"], ["o", "residual"]]}, None),
    "split-kv-4": ({"tiling": {"attention": {"n_partitions": 4}}, "sm_assignment": "round_robin"}, "h100"),
}


def _unplaced(prog: MegakernelProgram) -> str:
    return amkspec.dumps(attrs.evolve(prog, tasks=[attrs.evolve(t, sm=None) for t in prog.tasks]))


@settings(max_examples=20)
@given(st.sampled_from(sorted(CONFIGS)), st.integers(0, 255), st.integers(0, 255))
def test_a_moved_step_is_the_step_lowered_there(name: str, start: int, pos: int) -> None:
    config, target = CONFIGS[name]
    moved = at_position(lower("toy-2L", target, config, pos=start), pos)
    again = lower("toy-2L", target, config, pos=pos)
    if moved is None:  # only split-KV changes shape: another shard count
        assert name == "split-kv-4"
        shards = [sum(1 for t in p.tasks if t.label.startswith("L0.attention.s"))
                  for p in (lower("toy-2L", target, config, pos=start), again)]
        assert shards[0] != shards[1]
        return
    assert _unplaced(moved) == _unplaced(again)  # the SM placement is the start's (any is safe)
    assert amkspec.validate(moved).ok


def test_a_program_without_the_lowering_meta_is_not_moved() -> None:
    prog = lower("toy")
    prog.meta.pop("regime")
    assert at_position(prog, 3) is None


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_lowers_once_per_bucket_and_builds_one_vm(name: str) -> None:
    config, target = CONFIGS[name]
    built: list[ReferenceVM] = []

    def make(prog: MegakernelProgram) -> ReferenceVM:
        built.append(ReferenceVM(prog))
        return built[-1]

    run = greedy_decode("toy-2L", [3, 141, 7], 30, config=config, target=target, make_vm=make)
    assert run.agree
    buckets = len({sum(1 for t in lower("toy-2L", target, config, pos=p).tasks
                       if t.label.startswith("L0.attention.s")) for p in range(len(run.steps))})
    assert run.lowered == len(built) == run.vms_built == buckets
    assert (buckets == 1) == (name != "split-kv-4")


def test_a_megakernel_style_vm_gets_a_moved_program_and_the_caches_each_launch() -> None:
    class Fresh:
        """A VM without advance(): one per launch, given the previous caches."""

        def __init__(self, prog: MegakernelProgram) -> None:
            self.vm = ReferenceVM(prog)

        def run(self, *args: object, **kwargs: object) -> dict[str, object]:
            return self.vm.run(*args, **kwargs)  # type: ignore[arg-type]

    ref = greedy_decode("toy-2L", [3, 141], 5)
    run = greedy_decode("toy-2L", [3, 141], 5, make_vm=Fresh)
    assert run.agree and run.lowered == 1 and run.vms_built == len(run.steps)
    assert run.vm_generated == ref.vm_generated
    assert [s.logits.tolist() for s in run.steps] == [s.logits.tolist() for s in ref.steps]  # type: ignore[union-attr]
