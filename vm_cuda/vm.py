"""``MegakernelVM``: one Python API over the CPU build and the GPU (spec §8.5, §8.7).

``run`` binds exactly as the ReferenceVM does (``amkspec.vm.binding``), stages the launch in the
backend's memory (:mod:`vm_cuda.resident`: the weights uploaded once and again only when they
change, the KV caches kept there across launches, per launch only the status, counters,
activations and IO copied), launches it and returns what ``ReferenceVM.run`` returns:
``{buffer name: tensor}`` for every IO_OUTPUT and KV_CACHE buffer (``fetch_kv=False`` leaves the
caches where they are), with the KV caches carried over to the next launch unless ``kv``
replaces them. As the ReferenceVM does, it forgets the carried caches when a launch fails
(``KernelTimeout``, ``KernelFault``) and leaves them when binding fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch

from amkspec.ir import BufferKind, MegakernelProgram
from amkspec.ir.graph import writers_by_buffer
from amkspec.ir.snapshot import snapshot
from amkspec.vm.binding import bind, values
from vm_cuda.pack import Packer, refuse_rejected, watchdog_ns
from vm_cuda.resident import Memory, ResidentImage
from vm_cuda.status import KernelFault, KernelTimeout, RunStatus, decode_record

Backend = Literal["cpu", "cuda"]
DEFAULT_TIMEOUT_S = 10.0
"""Default watchdog: a block that waits longer than this stops the launch with TIMEOUT."""
MIN_DEADLINE_S = 300.0
"""The host deadline of a launch is at least this, and at least 4 × the watchdog (see ``deadline_s``)."""


def default_deadline(timeout_s: float) -> float:
    """The host deadline of a launch when none is given: ``max(MIN_DEADLINE_S, 4 × timeout_s)``."""
    return max(MIN_DEADLINE_S, 4.0 * timeout_s)


def make_runtime(backend: str, threads_per_block: int | None, variant: str) -> Memory:
    """The runtime of ``backend`` (``cuda`` imports the GPU stack lazily)."""
    if backend == "cpu":
        from vm_cuda.cpu import CPU_THREADS_PER_BLOCK, CpuRuntime

        return CpuRuntime(variant, threads_per_block or CPU_THREADS_PER_BLOCK)
    if backend == "cuda":
        from vm_cuda.cuda import CudaRuntime

        return CudaRuntime(threads_per_block)
    raise ValueError(f"unknown megakernel backend {backend!r} (cpu or cuda)")


def _version(value: Any) -> Any:
    """What changes when a weight value changes in place: a tensor's version counter and storage."""
    if isinstance(value, torch.Tensor):
        return (value._version, value.data_ptr(), tuple(value.shape), value.dtype)
    return None


class MegakernelVM:
    """Run ``program`` on the megakernel (refused with ``RefusedProgram`` if ``validate()`` rejects it).

    ``backend``: ``"cpu"`` (the CPU build) or ``"cuda"`` (a GPU). ``timeout_s``: the watchdog,
    a number of seconds more than 0 (:func:`~vm_cuda.pack.watchdog_ns`; else ``ValueError``).
    ``deadline_s``: the host's deadline for one launch (default :func:`default_deadline`): past
    it the host writes the abort word and the launch ends with TIMEOUT.
    ``threads_per_block``: default 4 on the CPU build, the program's ``config.threads_per_block``
    (else 256) on a GPU.
    ``last_status`` is the last launch's :class:`RunStatus`; ``run`` raises
    :class:`KernelTimeout` / :class:`KernelFault` when it is not OK. ``_unsafe_skip_validation``
    is test-only: it lets a program the validator rejects reach the kernel (to force a deadlock).
    ``validation``: the caller's result of ``validate()`` on this very program, used when its stats
    match (:func:`amkspec.proofs.validated`); a rejected program is refused either way.
    As the ReferenceVM does, it validates and runs its own snapshot of ``program``
    (``self.program``; read it, never change it): a later change to ``program`` never runs.
    Weights are uploaded on the first launch and again for a weight whose value is not the object
    given before or is a tensor changed in place since (its version counter); a numpy array
    changed in place is not seen: pass a new array.
    """

    def __init__(
        self,
        program: MegakernelProgram,
        backend: Backend = "cpu",
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        deadline_s: float | None = None,
        threads_per_block: int | None = None,
        variant: str = "release",
        validation: Any = None,
        _unsafe_skip_validation: bool = False,
    ) -> None:
        if watchdog_ns(timeout_s) == 0:
            raise ValueError("timeout_s must be more than 0: a MegakernelVM never runs without its watchdog")
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(f"deadline_s must be seconds more than 0, not {deadline_s!r}")
        program = snapshot(program)  # spec §2.4: what runs is exactly what was validated
        self.program = program
        self.backend = backend
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s if deadline_s is not None else default_deadline(timeout_s)
        self.validation = None if _unsafe_skip_validation else refuse_rejected(program, validation)
        if threads_per_block is None and backend == "cuda" and program.config is not None:
            threads_per_block = program.config.threads_per_block
        self.runtime = make_runtime(backend, threads_per_block, variant)
        self.packer = Packer(
            program, max_blocks=self.runtime.max_blocks, _validation=self.validation,
            _unsafe_skip_validation=_unsafe_skip_validation,
        )
        self.resident = ResidentImage(self.packer, self.runtime, timeout_s)
        self.last_status: RunStatus | None = None
        self._written = set(writers_by_buffer(program))
        self._kv_valid = False
        self._weights_seen: dict[str, tuple[Any, Any]] = {}
        slots = self.packer.slots
        self._resident = [k for k, s in enumerate(slots[: len(program.buffers)]) if s.region == "resident"]
        self._caches = [k for k, b in enumerate(program.buffers) if b.kind is BufferKind.KV_CACHE]
        self._outputs = [k for k, b in enumerate(program.buffers) if b.kind is BufferKind.IO_OUTPUT]

    def reset(self) -> None:
        """Forget the KV caches carried over from earlier launches."""
        self._kv_valid = False

    def _changed_weights(self, weights: Mapping[str, Any]) -> list[int]:
        """Table indices of the resident buffers whose weight is not what was uploaded last."""
        changed = []
        for k in self._resident:
            buf = self.program.buffers[k]
            key = buf.source or buf.name
            seen = self._weights_seen.get(key)
            value = weights[key]
            if seen is None or seen[0] is not value or seen[1] != _version(value):
                changed.append(k)
        return changed

    def run(
        self,
        weights: Mapping[str, Any],
        inputs: Mapping[str, Any],
        kv: Mapping[str, Any] | None = None,
        *,
        fetch_kv: bool = True,
    ) -> dict[str, torch.Tensor]:
        """One launch (one forward pass); see the module docstring."""
        weights, inputs = values(weights, "weights"), values(inputs, "inputs")
        given = values(kv, "kv") if kv is not None else {}
        bound = bind(self.program, weights, inputs, given, self._written)
        buffers = self.program.buffers
        caches = [k for k in self._caches if not self._kv_valid or buffers[k].name in given]
        fetch = self._outputs + (self._caches if fetch_kv else [])
        self._kv_valid = False  # until this launch succeeds
        try:
            record, got = self.resident.launch(
                bound, self._changed_weights(weights) + caches, fetch, self.deadline_s
            )
        except (KernelFault, KernelTimeout) as exc:
            self._weights_seen = {}
            self.last_status = exc.status
            raise
        self._weights_seen = {
            key: (weights[key], _version(weights[key]))
            for key in {buffers[k].source or buffers[k].name for k in self._resident}
        }
        status = self.last_status = decode_record(record, self.program, self.deadline_s)
        if status.kind != "OK":
            raise KernelTimeout(status) if status.kind == "TIMEOUT" else KernelFault(status)
        self._kv_valid = True
        return {buffers[k].name: got[k] for k in sorted(fetch)}
