"""The CUDA cooperative megakernel and its CPU build (spec §8).

::

    from vm_cuda import MegakernelVM
    vm = MegakernelVM(program, backend="cpu", timeout_s=2.0)   # RefusedProgram if validate() rejects it
    out = vm.run(weights, inputs, kv=None)   # what ReferenceVM(program).run(...) returns (spec §8.8)
    vm.last_status.kind                      # "OK" | "TIMEOUT" | "FAULT"
"""

from __future__ import annotations

from amkspec.vm.errors import RefusedProgram
from vm_cuda.build import BuildError
from vm_cuda.pack import PackError, pack
from vm_cuda.status import KernelFault, KernelTimeout, RunStatus
from vm_cuda.vm import MegakernelVM

__all__ = [
    "BuildError",
    "KernelFault",
    "KernelTimeout",
    "MegakernelVM",
    "PackError",
    "RefusedProgram",
    "RunStatus",
    "pack",
]
