"""``MegakernelVM``: one Python API over the CPU build and the GPU (spec §8.5).

``run`` binds exactly as the ReferenceVM does (``amkspec.vm.binding``), packs the image
(``vm_cuda.pack``), launches it on the chosen backend and returns what
``ReferenceVM.run`` returns: ``{buffer name: tensor}`` for every IO_OUTPUT and KV_CACHE
buffer, with the KV caches carried over to the next launch unless ``kv`` replaces them. As the
ReferenceVM does, it forgets the carried caches when a launch fails (``KernelTimeout``,
``KernelFault``) and leaves them when binding fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import numpy as np
import torch

from amkspec.ir import BufferKind, MegakernelProgram
from amkspec.ir.graph import writers_by_buffer
from amkspec.ir.snapshot import snapshot
from amkspec.vm.binding import bind, values
from vm_cuda.pack import Image, Packer, refuse_rejected, watchdog_ns
from vm_cuda.status import KernelFault, KernelTimeout, RunStatus, decode

Backend = Literal["cpu", "cuda"]
DEFAULT_TIMEOUT_S = 10.0
"""Default watchdog: a block that waits longer than this stops the launch with TIMEOUT."""


class Runtime(Protocol):
    """A backend: runs an image to completion and returns its bytes afterwards."""

    max_blocks: int
    """The most blocks one launch may have (all co-resident)."""

    def launch(self, image: Image) -> np.ndarray: ...


def make_runtime(backend: str, threads_per_block: int | None, variant: str) -> Runtime:
    """The runtime of ``backend`` (``cuda`` imports the GPU stack lazily)."""
    if backend == "cpu":
        from vm_cuda.cpu import CPU_THREADS_PER_BLOCK, CpuRuntime

        return CpuRuntime(variant, threads_per_block or CPU_THREADS_PER_BLOCK)
    if backend == "cuda":
        from vm_cuda.cuda import CudaRuntime

        return CudaRuntime(threads_per_block)
    raise ValueError(f"unknown megakernel backend {backend!r} (cpu or cuda)")


class MegakernelVM:
    """Run ``program`` on the megakernel (refused with ``RefusedProgram`` if ``validate()`` rejects it).

    ``backend``: ``"cpu"`` (the CPU build) or ``"cuda"`` (a GPU). ``timeout_s``: the watchdog,
    a number of seconds more than 0 (:func:`~vm_cuda.pack.watchdog_ns`; else ``ValueError``).
    ``threads_per_block``: default 4 on the CPU build, the program's ``config.threads_per_block``
    (else 256) on a GPU.
    ``last_status`` is the last launch's :class:`RunStatus`; ``run`` raises
    :class:`KernelTimeout` / :class:`KernelFault` when it is not OK. ``_unsafe_skip_validation``
    is test-only: it lets a program the validator rejects reach the kernel (to force a deadlock).
    As the ReferenceVM does, it validates and runs its own snapshot of ``program``
    (``self.program``; read it, never change it): a later change to ``program`` never runs.
    """

    def __init__(
        self,
        program: MegakernelProgram,
        backend: Backend = "cpu",
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        threads_per_block: int | None = None,
        variant: str = "release",
        _unsafe_skip_validation: bool = False,
    ) -> None:
        if watchdog_ns(timeout_s) == 0:
            raise ValueError("timeout_s must be more than 0: a MegakernelVM never runs without its watchdog")
        program = snapshot(program)  # spec §2.4: what runs is exactly what was validated
        self.program = program
        self.backend = backend
        self.timeout_s = timeout_s
        self.validation = None if _unsafe_skip_validation else refuse_rejected(program)
        if threads_per_block is None and backend == "cuda" and program.config is not None:
            threads_per_block = program.config.threads_per_block
        self.runtime = make_runtime(backend, threads_per_block, variant)
        self.packer = Packer(
            program, max_blocks=self.runtime.max_blocks, _validation=self.validation,
            _unsafe_skip_validation=_unsafe_skip_validation,
        )
        self.last_status: RunStatus | None = None
        self._written = set(writers_by_buffer(program))
        self._kv: dict[str, torch.Tensor] = {}

    def reset(self) -> None:
        """Forget the KV caches carried over from earlier launches."""
        self._kv = {}

    def run(
        self,
        weights: Mapping[str, Any],
        inputs: Mapping[str, Any],
        kv: Mapping[str, Any] | None = None,
    ) -> dict[str, torch.Tensor]:
        """One launch (one forward pass); see the module docstring."""
        weights, inputs = values(weights, "weights"), values(inputs, "inputs")
        state = {**self._kv, **(values(kv, "kv") if kv is not None else {})}
        bound = bind(self.program, weights, inputs, state, self._written)
        image = self.packer.image(bound, timeout_s=self.timeout_s)
        data = self.runtime.launch(image)
        status = self.last_status = decode(data, self.program)
        if status.kind != "OK":
            self._kv = {}  # as the ReferenceVM forgets the caches a failed launch wrote part way
            raise KernelTimeout(status) if status.kind == "TIMEOUT" else KernelFault(status)
        out: dict[str, torch.Tensor] = {}
        for k, buf in enumerate(self.program.buffers):
            if buf.kind is BufferKind.IO_OUTPUT:
                out[buf.name] = image.tensor(k, data)
            elif buf.kind is BufferKind.KV_CACHE:
                self._kv[buf.name] = image.tensor(k, data)
                out[buf.name] = self._kv[buf.name].clone()
        return out
