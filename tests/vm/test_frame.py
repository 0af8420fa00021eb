"""The ReferenceVM's launch frame (amkspec.vm.frame, issue 13): launch after launch, exactly what
a fresh binding (the Replay path binds afresh and runs the reference functions) gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.ir import BufferKind, MegakernelProgram, ScheduleConfig
from amkspec.lower import lower
from amkspec.lower.decode import step_inputs
from amkspec.models import TOY_2L, make_weights
from amkspec.programs.small import add_weight, embed_append, kv_snapshot
from amkspec.programs.strategies import valid_programs
from amkspec.vm import BindingError, ExecutionError, ReferenceVM, Replay
from amkspec.vm.operands import operands

CONFIG = ScheduleConfig(tiling={"gemv": {"N_tile": 32}}, page_allocation="graph_color")
FRESH = Replay(trace=[], finish=True)
"""No trace, then every task in list order: ``bind`` afresh and the reference functions."""


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def toy() -> tuple[Any, dict[str, torch.Tensor]]:
    return lower(TOY_2L, "h100", CONFIG, pos=2), make_weights(TOY_2L)


def test_launches_match_a_fresh_binding_step_after_step(toy: Any) -> None:
    prog, weights = toy
    vm, fresh = ReferenceVM(prog), ReferenceVM(prog)
    kv: dict[str, torch.Tensor] | None = None
    for tok in (1, 7, 3):
        out = vm.run(weights, step_inputs(2, [tok]), kv)
        assert _equal(out, fresh.run(weights, step_inputs(2, [tok]), kv, policy=FRESH))
        kv = {k: v for k, v in out.items() if k.endswith("cache")}
    assert vm.run(weights, step_inputs(2, [5])).keys() == out.keys()  # the VM's own caches, no kv



def _same_bits(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    """The same keys, and tensors of the same dtype and shape whose values are the same (NaN where
    the other has NaN): both paths run the same reference numerics on this host."""
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype
        and a[k].shape == b[k].shape
        and torch.equal(a[k].isnan(), b[k].isnan())
        and torch.equal(a[k].nan_to_num(0.0), b[k].nan_to_num(0.0))
        for k in a
    )


@settings(max_examples=20, deadline=None)
@given(valid_programs(max_tasks=12), st.integers(0, 2**16))
def test_launches_match_a_fresh_binding_on_valid_programs(program: MegakernelProgram, seed: int) -> None:
    """The frame (the fast path, launch after launch) gives what ``bind`` afresh and the reference
    functions give, on any valid program, for a first launch and one that carries its caches."""
    weights, inputs = operands(program, seed)
    _, later = operands(program, seed + 1)
    vm, fresh = ReferenceVM(program), ReferenceVM(program)
    out = vm.run(weights, inputs)
    assert _same_bits(out, fresh.run(weights, inputs, policy=FRESH))
    kv = {b.name: out[b.name] for b in program.buffers if b.kind is BufferKind.KV_CACHE}
    assert _same_bits(vm.run(weights, later, kv), fresh.run(weights, later, kv, policy=FRESH))

def test_new_or_edited_weights_are_seen(toy: Any) -> None:
    prog, weights = toy
    vm = ReferenceVM(prog)
    first = vm.run(weights, step_inputs(2, [1]))
    other = {k: v * 0.5 for k, v in weights.items()}  # new objects: the frame is rebuilt
    vm.reset()
    halved = vm.run(other, step_inputs(2, [1]))
    vm.reset()
    assert _equal(halved, ReferenceVM(prog).run(other, step_inputs(2, [1]), policy=FRESH))
    assert not torch.equal(halved["logits"], first["logits"])
    edited = {k: v.clone() for k, v in weights.items()}
    vm.run(edited, step_inputs(2, [1]))
    for v in edited.values():  # the same objects, edited in place: shared, as bind shares them
        v.mul_(0.5)
    vm.reset()
    assert _equal(vm.run(edited, step_inputs(2, [1])), halved)


def test_a_failed_launch_leaves_no_trace(toy: Any) -> None:
    prog, weights = toy
    vm = ReferenceVM(prog)
    out = vm.run(weights, step_inputs(2, [1]))
    out["logits"].fill_(7.0)  # what the VM returned is the caller's own
    with pytest.raises(BindingError, match="missing inputs: 'token_id'"):
        vm.run(weights, {})
    bad = dict(step_inputs(2, [1]), token_id=np.zeros((3,), dtype=np.int32))
    with pytest.raises(BindingError, match="shape"):
        vm.run(weights, bad)
    again = vm.run(weights, step_inputs(2, [4]))
    fresh = ReferenceVM(prog)
    fresh.run(weights, step_inputs(2, [1]))
    assert _equal(again, fresh.run(weights, step_inputs(2, [4]), policy=FRESH))


def test_a_binding_error_leaves_the_carried_caches_even_with_kv_given(toy: Any) -> None:
    """The carried caches live in the frame: a launch refused while binding writes none of it,
    not even the caches it was given."""
    prog, weights = toy
    vm = ReferenceVM(prog)
    first = vm.run(weights, step_inputs(2, [1]))
    given = {k: torch.full_like(v, 9.0) for k, v in first.items() if k.endswith("cache")}
    last = [b.name for b in prog.buffers if b.name in given][-1]
    given[last] = given[last][:1]  # the last cache bound is refused, after the others convert
    with pytest.raises(BindingError, match=f"kv '{last}': shape"):
        vm.run(weights, step_inputs(2, [1]), given)
    fresh = ReferenceVM(prog)
    fresh.run(weights, step_inputs(2, [1]))
    assert _equal(vm.run(weights, step_inputs(2, [4])), fresh.run(weights, step_inputs(2, [4]), policy=FRESH))


@pytest.mark.parametrize("policy", [None, FRESH])
def test_a_launch_that_fails_while_running_forgets_the_carried_caches(toy: Any, policy: Any) -> None:
    prog, weights = toy
    vm = ReferenceVM(prog)
    vm.run(weights, step_inputs(2, [1]), policy=policy)
    with pytest.raises(ExecutionError, match="out of range"):
        vm.run(weights, step_inputs(2, [10_000]), policy=policy)
    assert _equal(vm.run(weights, step_inputs(2, [4])), ReferenceVM(prog).run(weights, step_inputs(2, [4])))


def test_kv_passed_in_replaces_the_vms_own() -> None:
    prog = kv_snapshot(pos=1)
    vm = ReferenceVM(prog)
    x = {"x": np.ones((1, 1, 2), dtype=np.float32)}
    first = vm.run({}, x)
    given = {"kc": np.full((4, 1, 2), 2.0, dtype=np.float32)}
    second = vm.run({}, x, given)
    assert _equal(second, ReferenceVM(prog).run({}, x, given, policy=FRESH))
    assert not torch.equal(first["kc"], second["kc"])
    vm.reset()
    assert _equal(vm.run({}, x), first)


def test_a_kept_weight_given_new_values_or_a_new_shape_binds_afresh() -> None:
    prog = add_weight()
    x = np.ones((1, 4), np.float32)
    w = torch.full((1, 4), 2.0)
    vm = ReferenceVM(prog)
    vm.run({"w": w}, {"x": x})
    w.data = torch.full((1, 4), 100.0)  # the same object, its values elsewhere (a checkpoint load)
    assert vm.run({"w": w}, {"x": x})["y"].tolist() == [[101.0] * 4]
    array = np.full((1, 4), 2, np.float32)
    vm.run({"w": array}, {"x": x})
    array.shape = (4, 1)  # the same object, laid out anew
    with pytest.raises(BindingError, match=r"weight 'w': shape \(4, 1\)"):
        vm.run({"w": array}, {"x": x})


def test_a_failed_launch_leaves_no_stats() -> None:
    prog, table = embed_append(), torch.arange(10.0).reshape(5, 2)
    vm = ReferenceVM(prog)
    vm.run({"tab": table}, {"ids": [3]})
    assert vm.last_stats is not None
    with pytest.raises(ExecutionError):
        vm.run({"tab": table}, {"ids": [9]})
    assert vm.last_stats is None
