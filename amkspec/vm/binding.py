"""Binding a program's buffers to tensors for one launch (spec §2.3 decode-loop model, §1.6).

WEIGHT/CONST come from ``weights[source]`` (or the buffer name when it has no
source), IO_INPUT from ``inputs[name]``, KV_CACHE from ``kv[name]`` or the
previous launch (zeros on the first), ACTIVATION/IO_OUTPUT start as zeros.
Shapes must match exactly (packed I4: last dim ``ceil(K/2)``); dtypes convert when
the conversion is lossless, and float buffers also accept any float (F16/BF16
buffers take float32 arrays and round). The caller's tensors are never written:
read-only buffers that no task writes may share memory with the caller, every
other bound tensor is a private copy.

When the program carries a page allocation, the ACTIVATION buffers assigned to
one page share its storage (each a view of the page's first ``nbytes``), exactly
as on the device: a validated allocation then changes no result, and a bad one
clobbers data visibly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from amkspec.ir import READONLY_KINDS, WEIGHT_KINDS, Buffer, BufferKind, DType, MegakernelProgram
from amkspec.ir.limits import MAX_VM_BYTES
from amkspec.semantics import empty_storage, storage_shape, torch_dtype
from amkspec.vm.errors import BindingError

Tensor = torch.Tensor


def values(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` when it is a mapping of names to values (``weights``, ``inputs`` or ``kv``)."""
    if not isinstance(value, Mapping):
        raise BindingError(f"{what} must map names to arrays, not a {type(value).__name__}")
    return value


def as_tensor(value: Any, what: str) -> Tensor:
    """A CPU tensor viewing ``value`` (numpy array, dense torch tensor, or nested lists/numbers)."""
    if isinstance(value, Tensor):
        if value.layout is not torch.strided or value.is_nested or value.is_meta:
            kind = "meta" if value.is_meta else "nested" if value.is_nested else str(value.layout)[6:]
            raise BindingError(f"{what}: a {kind} tensor, not a dense array of values")
        try:
            return value.detach().cpu()
        except RuntimeError as exc:
            raise BindingError(f"{what}: cannot read the tensor ({str(exc).splitlines()[0]})") from None
    try:
        array = np.asarray(value)
        if not array.flags.writeable or not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="), copy=True)
        return torch.as_tensor(array)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise BindingError(f"{what}: not a numeric array ({exc})") from exc


def _lossless(src: Tensor, dst: torch.dtype) -> bool:
    """Whether converting ``src`` to ``dst`` keeps every value: integers must lie in ``dst``'s range
    (a round trip alone would accept uint64 2**64-1 as int32 -1 and back), others must round-trip."""
    try:
        if not src.dtype.is_floating_point and not dst.is_floating_point and src.dtype != torch.bool:
            if src.numel() == 0:
                return True
            info, values = torch.iinfo(dst), src.numpy()  # numpy: torch has no min/max of uint64
            return bool(int(values.min()) >= info.min and int(values.max()) <= info.max)
        return bool(torch.equal(src.to(dst).to(src.dtype), src))
    except RuntimeError:
        return False


def convert(value: Any, buffer: Buffer, what: str, private: bool) -> Tensor:
    """``value`` as the storage tensor of ``buffer``, shape- and type-checked (see the module doc)."""
    src = as_tensor(value, what)
    shape = storage_shape(buffer.dtype, buffer.shape)
    if tuple(src.shape) != shape:
        packed = " (packed I4: two levels per byte)" if buffer.dtype is DType.I4 else ""
        raise BindingError(f"{what}: shape {tuple(src.shape)} but buffer {buffer.name!r} is {shape}{packed}")
    dst = torch_dtype(buffer.dtype)
    if src.dtype == dst:
        return src.clone() if private else src
    if not src.is_complex():  # no buffer dtype holds complex values
        if buffer.dtype.is_float and (src.dtype.is_floating_point or _lossless(src, dst)):
            return src.to(dst)
        if not src.dtype.is_floating_point and _lossless(src, dst):
            return src.to(dst)
    raise BindingError(
        f"{what}: dtype {str(src.dtype).removeprefix('torch.')} does not convert losslessly to "
        f"buffer {buffer.name!r} of {buffer.dtype.name}"
    )


def paged_storage(program: MegakernelProgram) -> tuple[dict[int, Tensor], list[Tensor]]:
    """ACTIVATION buffer id → a view of its page's storage (spec §1.6), and the pages' storages."""
    if program.pages is None:
        return {}, []
    pages = {p.id: p for p in program.pages.pages}
    placed: list[tuple[Buffer, int]] = []
    sizes: dict[int, int] = {}
    for buf in program.buffers:
        page_id = program.pages.buffer_to_page.get(buf.id)
        if page_id is None or buf.kind is not BufferKind.ACTIVATION:
            continue
        page = pages.get(page_id)
        if page is None or page.nbytes < buf.nbytes:
            size = "is missing" if page is None else f"holds {page.nbytes} bytes"
            raise BindingError(f"buffer {buf.name!r} ({buf.nbytes} bytes) is on page {page_id}, which {size}")
        placed.append((buf, page_id))
        sizes[page_id] = max(sizes.get(page_id, page.nbytes), storage_bytes(buf))
    storage = {page_id: torch.zeros(n, dtype=torch.uint8) for page_id, n in sizes.items()}
    views = {
        buf.id: storage[page_id][: storage_bytes(buf)].view(torch_dtype(buf.dtype))
        .reshape(storage_shape(buf.dtype, buf.shape))
        for buf, page_id in placed
    }
    return views, list(storage.values())


def storage_bytes(buf: Buffer) -> int:
    """Bytes of the tensor holding ``buf``: its ``nbytes``, except that packed I4 rounds up per row."""
    return math.prod(storage_shape(buf.dtype, buf.shape)) * torch_dtype(buf.dtype).itemsize


def missing_error(kind: str, names: list[str]) -> BindingError:
    """The error naming the missing weights or inputs (the first eight, then a count)."""
    shown = ", ".join(repr(n) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return BindingError(f"missing {kind}: {shown}")


def bind(
    program: MegakernelProgram,
    weights: Mapping[str, Any],
    inputs: Mapping[str, Any],
    kv: Mapping[str, Tensor],
    written: set[int],
) -> dict[int, Tensor]:
    """Buffer id → bound tensor for one launch; ``kv`` holds the KV state to start from.

    A program whose buffers need more than ``max_vm_bytes`` (:mod:`amkspec.ir.limits`) is
    refused before anything is allocated, and a failed allocation is a BindingError too.
    """
    weights, inputs, kv = values(weights, "weights"), values(inputs, "inputs"), values(kv, "kv")
    check_memory(program)
    try:
        return _bind(program, weights, inputs, kv, written)
    except (MemoryError, RuntimeError) as exc:
        raise BindingError(f"cannot allocate the program's buffers: {str(exc).splitlines()[0]}") from None


def check_memory(program: MegakernelProgram, total: int | None = None) -> int:
    """Refuse a program whose buffers together need more than ``max_vm_bytes`` (an upper bound:
    every buffer and page counted as its own allocation); returns that need, which a caller may
    pass back as ``total`` for the same program."""
    cap = MAX_VM_BYTES.value()
    if total is None:
        total = sum(storage_bytes(b) for b in program.buffers)
        if program.pages is not None:
            total += sum(max(p.nbytes, 0) for p in program.pages.pages if isinstance(p.nbytes, int))
    if total > cap:
        raise BindingError(
            f"the program's buffers need up to {total} bytes, more than the ReferenceVM may allocate "
            f"({cap} bytes; set {MAX_VM_BYTES.env} to change it)"
        )
    return total


def _bind(
    program: MegakernelProgram,
    weights: Mapping[str, Any],
    inputs: Mapping[str, Any],
    kv: Mapping[str, Tensor],
    written: set[int],
) -> dict[int, Tensor]:
    bound: dict[int, Tensor] = paged_storage(program)[0]
    missing: dict[str, list[str]] = {"weights": [], "inputs": []}
    for buf in program.buffers:
        private = buf.id in written or buf.kind not in READONLY_KINDS
        if buf.kind in WEIGHT_KINDS:
            key = buf.source or buf.name
            if key not in weights:
                missing["weights"].append(key)
                continue
            bound[buf.id] = convert(weights[key], buf, f"weight {key!r}", private)
        elif buf.kind is BufferKind.IO_INPUT:
            if buf.name not in inputs:
                missing["inputs"].append(buf.name)
                continue
            bound[buf.id] = convert(inputs[buf.name], buf, f"input {buf.name!r}", private)
        elif buf.kind is BufferKind.KV_CACHE and buf.name in kv:
            bound[buf.id] = convert(kv[buf.name], buf, f"kv {buf.name!r}", True)
        elif buf.id not in bound:
            bound[buf.id] = empty_storage(buf)
    for kind, names in missing.items():
        if names:
            raise missing_error(kind, names)
    return bound


Operands = list[tuple[list[Tensor], list[Tensor]]]


def task_operands(program: MegakernelProgram, bound: Mapping[int, Tensor]) -> Operands:
    """Each task's input and output tensors, in the task's order (spec §7 operand order)."""
    try:
        return [([bound[b] for b in t.inputs], [bound[b] for b in t.outputs]) for t in program.tasks]
    except (KeyError, TypeError) as exc:
        raise BindingError(f"a task names buffer {exc}, which the program does not declare") from exc
