"""The megakernel packs and runs its own snapshot of the program (spec §2.4): a change the caller
makes after building the packer or the VM never reaches an image."""

from __future__ import annotations

import numpy as np
import torch

from amkspec.ir import MegakernelProgram
from amkspec.ir.graph import writers_by_buffer
from amkspec.programs.small import scale_chain
from amkspec.vm.binding import bind
from vm_cuda import MegakernelVM
from vm_cuda.pack import Packer, unpack

X = {"x": torch.tensor([[1.0, 2.0, 3.0, 4.0]])}


def _change(p: MegakernelProgram) -> None:
    """Three changes validate() would have to see: a counter's init, a param and a dropped wait."""
    p.counters[0].init = 1
    p.tasks[1].params["scale"] = 5.0
    p.tasks[1].waits.clear()


def test_a_packer_packs_what_it_validated() -> None:
    prog, pristine = scale_chain(), scale_chain()
    packer = Packer(prog)
    _change(prog)
    bound = bind(pristine, {}, X, {}, set(writers_by_buffer(pristine)))
    got = unpack(packer.image(bound).data)
    want = unpack(Packer(pristine).image(bound).data)
    assert np.array_equal(got.counters, want.counters)
    assert got.tasks.tobytes() == want.tasks.tobytes()
    assert packer.program == pristine


def test_the_cpu_megakernel_runs_what_it_validated(cxx: str) -> None:
    prog = scale_chain()
    vm = MegakernelVM(prog, "cpu")
    _change(prog)
    got = vm.run({}, X)
    assert torch.equal(got["z"], torch.tensor([[6.0, 12.0, 18.0, 24.0]]))
    assert vm.program == scale_chain()
