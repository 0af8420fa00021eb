"""Properties of the VM on random valid programs: every legal execution computes the same outputs."""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import MegakernelProgram
from amkspec.vm import ReferenceVM, Replay, SeededRandom
from tests.vm.strategies import interleavings, tiled_dags

X = {"x": torch.tensor([[0.5, -1.0, 2.0]])}


@given(st.data())
def test_every_legal_interleaving_of_a_valid_program_gives_the_same_outputs(data: st.DataObject) -> None:
    program, weights = data.draw(tiled_dags())
    trace = data.draw(interleavings(program))
    vm = ReferenceVM(program)
    expected = vm.run(weights, X)
    shuffled = vm.run(weights, X, policy=SeededRandom(data.draw(st.integers(0, 99))))
    replayed = vm.run(weights, X, policy=Replay(trace))
    assert vm.last_stats is not None and vm.last_stats.replay is not None
    assert vm.last_stats.replay.clean
    for name, value in expected.items():
        assert torch.equal(value, shuffled[name]) and torch.equal(value, replayed[name])


@given(tiled_dags())
def test_outputs_are_the_composed_products(case: tuple[MegakernelProgram, dict[str, Any]]) -> None:
    program, weights = case
    out = ReferenceVM(program).run(weights, X)
    values: dict[int, torch.Tensor] = {}
    names = {b.id: b.name for b in program.buffers}
    for task in sorted(program.tasks, key=lambda t: int(t.label[1:])):
        x = X["x"] if names[task.inputs[0]] == "x" else values[task.inputs[0]]
        w = weights[names[task.inputs[1]]]
        n_off = task.params["n_off"]
        acc = values.setdefault(task.outputs[0], torch.zeros(1, w.shape[0]))
        acc[:, n_off : n_off + 2] = x @ w[n_off : n_off + 2].T
    for buf, value in values.items():
        torch.testing.assert_close(out[names[buf]], value)
