"""ReferenceVM.advance: the next position's program on the same launch frame (spec §2.3)."""

from __future__ import annotations

import attrs
import pytest
import torch

from amkspec.ir import Wait
from amkspec.lower import lower
from amkspec.lower.decode import step_inputs
from amkspec.lower.positions import at_position
from amkspec.models import TOY_2L, make_weights
from amkspec.vm import ReferenceVM, RefusedProgram
from amkspec.vm.machine import same_graph

W = make_weights(TOY_2L)


def test_advancing_equals_fresh_vms_with_the_caches() -> None:
    base = lower("toy-2L")
    vm = ReferenceVM(base)
    kv = None
    for pos, token in enumerate([3, 141, 9, 200]):
        prog = at_position(base, pos)
        assert prog is not None
        if pos:
            vm.advance(prog)
        got = vm.run(W, step_inputs(pos, [token]), kv_out=False)
        fresh = ReferenceVM(prog).run(W, step_inputs(pos, [token]), kv)
        kv = {k: v for k, v in fresh.items() if k != "logits"}
        assert torch.equal(got["logits"], fresh["logits"]) and set(got) == {"logits"}
        assert all(torch.equal(vm.caches[k], v) for k, v in kv.items())


def test_the_frame_is_kept() -> None:
    base = lower("toy-2L")
    vm = ReferenceVM(base)
    vm.run(W, step_inputs(0, [3]))
    frame = vm._frame
    vm.advance(at_position(base, 1))  # type: ignore[arg-type]
    vm.run(W, step_inputs(1, [5]))
    assert vm._frame is frame and vm.program.meta["pos"] == 1


def test_another_graph_is_refused() -> None:
    base = lower("toy-2L")
    vm = ReferenceVM(base)
    other = lower("toy-2L", config={"tiling": {"gemv": {"N_tile": 16}}, "sm_assignment": {}})
    assert not same_graph(base, other)
    with pytest.raises(ValueError, match="same tasks"):
        vm.advance(other)


def test_an_advanced_program_is_validated() -> None:
    base = lower("toy-2L")
    vm = ReferenceVM(base)
    bad = at_position(base, 1)
    assert bad is not None
    append = next(t for t in bad.tasks if t.op.name == "KV_APPEND")
    bad = attrs.evolve(bad, tasks=[attrs.evolve(t, params={**t.params, "pos": 10_000}) if t is append else t
                                   for t in bad.tasks])
    with pytest.raises(RefusedProgram):
        vm.advance(bad)
    assert vm.program.meta["pos"] == 0  # unchanged: the refused program never runs
    assert same_graph(base, attrs.evolve(base, meta={}))
    assert not same_graph(base, attrs.evolve(base, tasks=[attrs.evolve(base.tasks[0], waits=[Wait(0, 1)]),
                                                          *base.tasks[1:]]))
