"""Resident device state (spec §8.7): one program's image kept in a runtime's memory across launches.

The first launch (and the first after the runtime lost its memory: a GPU context reset) writes
the whole image, relocated to where it lives. Every later launch writes only what a launch
changes (:data:`vm_cuda.pack.REGIONS`): the status record (zeroed), the counters (their
``init``), the ACTIVATION, scratch and IO_OUTPUT storage (zeroed), the IO_INPUT storage, and
the WEIGHT/CONST or KV_CACHE buffers it is asked to upload (weights that changed, caches the
caller replaced); it reads back the status, the IO_OUTPUT storage and, when asked, the caches.
The CPU build and the GPU run this same code; only the :class:`Memory` differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

import numpy as np
import torch

from vm_cuda import layout
from vm_cuda.pack import Image, Packer, relocate


class Memory(Protocol):
    """Where an image lives and runs: the CPU build's host array or a GPU's device memory."""

    generation: int
    """Changes whenever earlier allocations were lost (the image must then be written again)."""
    max_blocks: int
    threads_per_block: int

    def allocate(self, nbytes: int, staging_bytes: int) -> int:
        """Memory for an ``nbytes`` image (any earlier one freed) and ``staging_bytes`` of pinned
        host staging for the per-launch copies; the image's base address."""
        ...

    def write(self, offset: int, data: np.ndarray) -> None:
        """Copy ``data`` (uint8) to the image at ``offset``."""
        ...

    def zero(self, offset: int, nbytes: int) -> None:
        """Zero ``nbytes`` of the image from ``offset``."""
        ...

    def read(self, ranges: Iterable[tuple[int, int]]) -> list[np.ndarray]:
        """Copies of the image's ``(offset, nbytes)`` ranges."""
        ...

    def run(self, grid: int, deadline_s: float, abort_offset: int) -> None:
        """Launch the image with ``grid`` blocks and wait; past ``deadline_s`` seconds, write
        ``AMK_ABORT_HOST`` to the abort word at ``abort_offset`` (KernelTimeout if it does not stop)."""
        ...


def _bytes(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()


class ResidentImage:
    """One program's image in ``memory``: :meth:`launch` stages, runs and reads back one launch."""

    def __init__(self, packer: Packer, memory: Memory, timeout_s: float) -> None:
        self.packer, self.memory, self.timeout_s = packer, memory, timeout_s
        self.generation: int | None = None
        self.header: np.void | None = None
        self.counters = np.array([c.init for c in packer.program.counters] or [0], dtype="<u4")

    @property
    def fresh(self) -> bool:
        """Whether the next launch writes the whole image (first launch, or memory lost)."""
        return self.generation != self.memory.generation

    def _data(self, k: int) -> int:
        assert self.header is not None
        return int(self.header["data_off"]) + self.packer.slots[k].offset

    def _write_all(self, bound: Mapping[int, torch.Tensor]) -> None:
        image: Image = self.packer.image(bound, timeout_s=self.timeout_s)
        regions = self.packer.region_bounds
        per_launch = sum(regions[r][1] - regions[r][0] for r in ("outputs", "inputs", "kv"))
        staging = layout.align(layout.STATUS.itemsize) * 2 + 4 * len(self.counters) + per_launch
        base = self.memory.allocate(image.data.size, staging)
        relocate(image.data, base)
        self.header = image.data[: layout.HEADER.itemsize].view(layout.HEADER)[0].copy()
        self.memory.write(0, image.data)
        self.generation = self.memory.generation

    def _write_step(self, bound: Mapping[int, torch.Tensor], upload: Iterable[int]) -> None:
        assert self.header is not None
        mem, h = self.memory, self.header
        mem.write(int(h["status_off"]), np.zeros(layout.STATUS.itemsize, dtype=np.uint8))
        mem.write(int(h["counters_off"]), self.counters.view(np.uint8))
        data_off = int(h["data_off"])
        start, _ = self.packer.region_bounds["zeroed"]
        _, end = self.packer.region_bounds["outputs"]
        if end > start:
            mem.zero(data_off + start, end - start)
        buffers = self.packer.program.buffers
        inputs = [k for k, s in enumerate(self.packer.slots) if s.region == "inputs"]
        for k in (*inputs, *upload):
            mem.write(self._data(k), _bytes(bound[buffers[k].id]))

    def launch(
        self,
        bound: Mapping[int, torch.Tensor],
        upload: Iterable[int],
        fetch: Iterable[int],
        deadline_s: float,
    ) -> tuple[np.void, dict[int, torch.Tensor]]:
        """Stage ``bound`` (``upload``: the table indices of resident or KV buffers to write; the whole
        image when :attr:`fresh`), run, and read back the status and the ``fetch`` buffers."""
        if self.fresh:
            self._write_all(bound)
        else:
            self._write_step(bound, upload)
        assert self.header is not None
        status_off = int(self.header["status_off"])
        self.memory.run(int(self.header["num_sms"]), deadline_s, status_off)
        fetch = list(fetch)
        slots = self.packer.slots
        got = self.memory.read(
            [(status_off, layout.STATUS.itemsize), *((self._data(k), slots[k].nbytes) for k in fetch)]
        )
        status = got[0].view(layout.STATUS)[0]
        out = {
            k: torch.from_numpy(raw).view(slots[k].dtype).reshape(slots[k].shape)
            for k, raw in zip(fetch, got[1:], strict=True)
        }
        return status, out
