"""The machines a program runs on, by the name ``--vm`` takes (spec §2 ReferenceVM, §8 megakernel).

``reference`` is :class:`amkspec.vm.ReferenceVM`; ``cpu-kernel`` and ``cuda`` are
``vm_cuda.MegakernelVM`` on its CPU build or a GPU (imported only when asked for). The CLI,
``amkspec.evaluate`` and the conformance adapter all choose their VM here.
"""

from __future__ import annotations

from typing import Any, Literal

from amkspec.ir import AmkspecError, MegakernelProgram

VM_NAMES = ("reference", "cpu-kernel", "cuda")
MEGAKERNEL_BACKENDS: dict[str, Literal["cpu", "cuda"]] = {"cpu-kernel": "cpu", "cuda": "cuda"}


class UnknownVM(AmkspecError, ValueError):
    """A VM name that is not one of :data:`VM_NAMES`."""


def megakernel_backend(name: str) -> Literal["cpu", "cuda"]:
    """The ``vm_cuda`` backend of a megakernel VM name."""
    try:
        return MEGAKERNEL_BACKENDS[name]
    except KeyError:
        raise UnknownVM(f"unknown VM {name!r} (use {', '.join(VM_NAMES)})") from None


def make_vm(name: str, program: MegakernelProgram, *, policy: Any = None,
            timeout_s: float | None = None, validation: Any = None) -> Any:
    """The VM ``name`` loaded with ``program`` (each refuses a program ``validate()`` rejects).

    ``policy`` applies to the ReferenceVM, ``timeout_s`` (the watchdog) to the megakernel;
    ``validation`` (the caller's result of ``validate()`` on this very program) to both.
    """
    if name == "reference":
        from amkspec.vm import ReferenceVM

        return ReferenceVM(program, policy=policy, validation=validation)
    backend = megakernel_backend(name)
    import vm_cuda

    if timeout_s is None:
        return vm_cuda.MegakernelVM(program, backend=backend, validation=validation)
    return vm_cuda.MegakernelVM(program, backend=backend, timeout_s=timeout_s, validation=validation)
