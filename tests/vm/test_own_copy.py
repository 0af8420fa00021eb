"""A VM validates and runs its own snapshot of the program (spec §2.4): whatever the caller changes
in its program after building the VM, the VM runs what it validated."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from amkspec.ir import MegakernelProgram
from amkspec.programs.small import scale_chain
from amkspec.proofs import validate
from amkspec.vm import ReferenceVM, Replay, SeededRandom

X = {"x": torch.tensor([[1.0, 2.0, 3.0, 4.0]])}


def _drop_wait(p: MegakernelProgram) -> None:
    p.tasks[1].waits.clear()  # the second task now races the first


def _rescale(p: MegakernelProgram) -> None:
    p.tasks[1].params["scale"] = 5.0


def _redirect(p: MegakernelProgram) -> None:
    p.tasks[1].inputs[0] = p.tasks[0].inputs[0]  # read x instead of y


def _raise_init(p: MegakernelProgram) -> None:
    p.counters[0].init = 1  # the wait on the first task holds before it runs


CHANGES: dict[str, Callable[[MegakernelProgram], None]] = {
    "drop a wait": _drop_wait, "change a param": _rescale, "redirect an input": _redirect,
    "raise a counter's init": _raise_init,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
@pytest.mark.parametrize("policy", [None, SeededRandom(3), Replay(trace=[], finish=True)],
                         ids=["list order", "seeded", "replay"])
def test_a_change_after_construction_never_runs(change: Callable[[MegakernelProgram], None],
                                                 policy: object) -> None:
    prog = scale_chain()
    vm = ReferenceVM(prog)
    change(prog)
    assert prog != scale_chain()
    got = vm.run({}, X, policy=policy)  # type: ignore[arg-type]
    assert torch.equal(got["z"], torch.tensor([[6.0, 12.0, 18.0, 24.0]]))
    assert vm.program == scale_chain()


def test_the_change_that_races_is_one_validate_rejects() -> None:
    prog = scale_chain()
    _drop_wait(prog)
    assert not validate(prog).ok


def test_the_vm_holds_no_list_of_the_callers_program() -> None:
    prog = scale_chain()
    vm = ReferenceVM(prog)
    assert vm.program is not prog
    assert all(a is not b for a, b in zip(vm.program.tasks, prog.tasks, strict=True))
    assert vm.program.tasks[1].waits is not prog.tasks[1].waits
