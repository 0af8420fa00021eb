"""A ReferenceVM's launch frame: tensors bound once, tasks pre-bound (spec §2.3, the decode-loop model).

:func:`amkspec.vm.binding.bind` binds a program afresh for every launch. A decode loop launches
the same program with the same weights again and again, so a VM keeps a *frame*:

* the tensors of every buffer, kept across launches and given their launch values at the start
  of each launch exactly as :func:`~amkspec.vm.binding.bind` would give them: ACTIVATION and
  IO_OUTPUT buffers (one zeroed arena) and pages are zeroed; IO_INPUT, KV_CACHE and weights that
  ``bind`` would copy or convert are converted by the same rules and copied in; weights that
  ``bind`` would share with the caller's arrays stay shared, as long as the caller passes the
  very same array objects, with their values where they were and laid out as they were;
* each task's operands, and a step per task: the prepared form of its opcode
  (:func:`amkspec.semantics.fast.prepare`) or its reference function on those operands.

The frame is built from one ordinary :func:`~amkspec.vm.binding.bind` (so a first launch
reports every binding error exactly as ``bind`` does) and rebuilt whenever the shared weights
are not the same objects or have moved or changed shape, strides or dtype. The ReferenceVM
copies what it returns, so nothing the caller holds ever aliases the frame; the KV caches it
carries to its next launch are the frame's own tensors, so :meth:`Frame.load` writes them only
once every value has bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from amkspec.ir import READONLY_KINDS, WEIGHT_KINDS, Buffer, BufferKind, MegakernelProgram
from amkspec.semantics import OP_SEMANTICS, storage_shape, torch_dtype
from amkspec.semantics.fast import prepare
from amkspec.vm.binding import (
    as_tensor,
    bind,
    check_memory,
    convert,
    missing_error,
    paged_storage,
    storage_bytes,
    task_operands,
)

Tensor = torch.Tensor
Step = Callable[[], None]
_ALIGN = 64
"""Byte alignment of each buffer in the zeroed arena (any dtype may view it)."""

def _layout(value: Any) -> tuple[Any, ...]:
    """Where a shared weight's values lie and how they are laid out: while this stays the same, the
    frame's tensor is what ``bind`` would share (a ``param.data = …`` or an ``ndarray.shape = …`` on
    the same object changes it)."""
    if isinstance(value, Tensor):
        return value.data_ptr(), value.shape, value.stride(), value.dtype
    return value.__array_interface__["data"][0], value.shape, value.strides, value.dtype


def _shares(value: Any, tensor: Tensor) -> bool:
    """Whether ``tensor`` (what ``bind`` made of ``value``) views the caller's own memory."""
    if isinstance(value, Tensor):
        viewable = value.device.type == "cpu"
    else:
        viewable = isinstance(value, np.ndarray) and value.flags.writeable and value.dtype.isnative
    return viewable and tensor.numel() > 0 and tensor.data_ptr() == as_tensor(value, "").data_ptr()


class Frame:
    """The persistent tensors, operands and steps of one program (see the module doc)."""

    def __init__(
        self, program: MegakernelProgram, weights: Mapping[str, Any], inputs: Mapping[str, Any],
        kv: Mapping[str, Tensor], written: set[int],
    ) -> None:
        bound = bind(program, weights, inputs, kv, written)
        self.program = program
        self.need = check_memory(program)
        self.shared: list[tuple[str, Any, tuple[Any, ...]]] = []
        self.copied: list[tuple[Buffer, Tensor]] = []
        self.tensors: dict[int, Tensor] = {}
        pages, self.zeroed = paged_storage(program)
        self.tensors.update(pages)
        arena_bufs: list[Buffer] = []
        for buf in program.buffers:
            private = buf.id in written or buf.kind not in READONLY_KINDS
            if buf.kind in WEIGHT_KINDS:
                key = buf.source or buf.name
                if not private and _shares(weights[key], bound[buf.id]):
                    self.shared.append((key, weights[key], _layout(weights[key])))
                    self.tensors[buf.id] = bound[buf.id]
                    continue
            if buf.kind in READONLY_KINDS or buf.kind is BufferKind.KV_CACHE:
                tensor = bound[buf.id].clone()
                self.copied.append((buf, tensor))
                self.tensors[buf.id] = tensor
            elif buf.id not in self.tensors:
                arena_bufs.append(buf)
        self._arena(arena_bufs)
        self.operands = task_operands(program, self.tensors)
        self.steps: list[Step] = [self._step(pos) for pos in range(len(program.tasks))]

    def _arena(self, bufs: list[Buffer]) -> None:
        """One zero-filled byte arena holding every ACTIVATION and IO_OUTPUT buffer not on a page."""
        offsets, size = [], 0
        for buf in bufs:
            offsets.append(size)
            size += -(-storage_bytes(buf) // _ALIGN) * _ALIGN
        arena = torch.zeros(size, dtype=torch.uint8)
        self.zeroed.append(arena)
        for buf, at in zip(bufs, offsets, strict=True):
            dtype = torch_dtype(buf.dtype)
            view = arena[at : at + storage_bytes(buf)].view(dtype)
            self.tensors[buf.id] = view.reshape(storage_shape(buf.dtype, buf.shape))

    def _step(self, pos: int) -> Step:
        task = self.program.tasks[pos]
        ins, outs = self.operands[pos]
        return prepare(task.op, ins, outs, task.params) or functools.partial(OP_SEMANTICS[task.op], ins, outs,
                                                                                 task.params)

    def retarget(self, program: MegakernelProgram, changed: list[int]) -> None:
        """Run ``program`` (the same graph, :func:`~amkspec.vm.machine.same_graph`) from now on:
        the steps of the tasks at positions ``changed`` (whose params differ) are prepared again."""
        self.program = program
        for pos in changed:
            self.steps[pos] = self._step(pos)

    def matches(self, weights: Mapping[str, Any]) -> bool:
        """Whether the shared weights are the very objects the frame was built with, each with its
        values where they were, laid out as they were (:func:`_layout`)."""
        return all(weights.get(key) is value and _layout(value) == at for key, value, at in self.shared)

    def load(self, weights: Mapping[str, Any], inputs: Mapping[str, Any], kv: Mapping[str, Any]) -> None:
        """Give every buffer its launch value (see the module doc); BindingError as ``bind`` raises it.
        The KV caches are written last, once nothing can fail: they hold what the VM carries over."""
        check_memory(self.program, self.need)
        missing: dict[str, list[str]] = {"weights": [], "inputs": []}
        caches: list[tuple[Tensor, Tensor | None]] = []  # each cache and its value (None: zeros)
        for buf, tensor in self.copied:
            if buf.kind in WEIGHT_KINDS:
                key = buf.source or buf.name
                if key not in weights:
                    missing["weights"].append(key)
                    continue
                tensor.copy_(convert(weights[key], buf, f"weight {key!r}", False))
            elif buf.kind is BufferKind.IO_INPUT:
                if buf.name not in inputs:
                    missing["inputs"].append(buf.name)
                    continue
                tensor.copy_(convert(inputs[buf.name], buf, f"input {buf.name!r}", False))
            else:
                caches.append((tensor, convert(kv[buf.name], buf, f"kv {buf.name!r}", False)
                               if buf.name in kv else None))
        for kind, names in missing.items():
            if names:
                raise missing_error(kind, names)
        for tensor, value in caches:
            if value is None:
                tensor.zero_()
            else:
                tensor.copy_(value)  # a carried cache is its own value: torch skips a self-copy
        for storage in self.zeroed:
            storage.zero_()
