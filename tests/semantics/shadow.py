"""Shadow memory for one task: which stored elements the reference numerics write and read.

* **written**: the outputs are pre-filled with two different sentinels and the op is run
  twice; an element is written when it differs from the sentinel in either run.
* **read**: every stored input element is perturbed in turn (NaN and ±100 for floats, +1
  modulo a domain for integers, bit flips for bytes); the element is read when some
  perturbation changes a written element (NaN-aware bitwise comparison).

Operands are bound by buffer id, so a buffer named as an input and an output (KV_APPEND's
cache) is one tensor, as in the ReferenceVM.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import torch

from amkspec.ir import Buffer, DType, InstructionKind
from amkspec.semantics import OP_SEMANTICS, OpError, storage_shape, torch_dtype

Tensor = torch.Tensor


@attrs.frozen
class Case:
    """One task: its opcode and params, its buffers, input/output ids, and the initial values."""

    op: InstructionKind
    params: Mapping[str, Any]
    buffers: dict[int, Buffer]
    inputs: list[int]
    outputs: list[int]
    values: dict[int, Tensor]
    domain: dict[int, int] = attrs.Factory(dict)
    """Buffer id → modulus of integer perturbations (token ids stay inside the table)."""


def tensor_for(buf: Buffer, gen: torch.Generator, high: int = 4) -> Tensor:
    shape = storage_shape(buf.dtype, buf.shape)
    dtype = torch_dtype(buf.dtype)
    if buf.dtype.is_float:
        return torch.randn(shape, generator=gen).to(dtype)
    if buf.dtype is DType.BOOL:
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    if buf.dtype in (DType.I4, DType.U8):
        return torch.randint(0, 256, shape, generator=gen).to(torch.uint8)
    return torch.randint(0, high, shape, generator=gen).to(dtype)


def _fill(t: Tensor, which: int) -> Tensor:
    if t.dtype == torch.bool:
        return torch.full_like(t, bool(which))
    if t.dtype == torch.uint8:
        return torch.full_like(t, 77 + 100 * which)
    if t.dtype.is_floating_point:
        return torch.full_like(t, -37.0 if which == 0 else 53.0)
    return torch.full_like(t, -77 if which == 0 else 99)


def _same(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_floating_point:
        af, bf = a.float(), b.float()
        return (af == bf) | (af.isnan() & bf.isnan())
    return a == b


def _run(case: Case, values: dict[int, Tensor]) -> dict[int, Tensor]:
    tensors = {b: v.clone() for b, v in values.items()}
    OP_SEMANTICS[case.op]([tensors[b] for b in case.inputs], [tensors[b] for b in case.outputs], case.params)
    return {b: tensors[b] for b in case.outputs}


def written(case: Case) -> dict[int, Tensor] | None:
    """Per output buffer, the mask of stored elements the op writes (None: the op raises)."""
    masks: dict[int, Tensor] = {}
    for which in (0, 1):
        values = dict(case.values)
        for b in case.outputs:
            values[b] = _fill(case.values[b], which)
        try:
            out = _run(case, values)
        except OpError:
            return None
        for b in case.outputs:
            changed = ~_same(out[b], values[b])
            masks[b] = masks[b] | changed if b in masks else changed
    return masks


def _perturbations(t: Tensor, idx: int, modulus: int | None) -> Iterator[Tensor]:
    flat = t.reshape(-1)
    v = flat[idx]
    if t.dtype.is_floating_point:
        base = float(v)
        for new in (float("nan"), base + 100.0, base - 100.0):
            p = flat.clone()
            p[idx] = new
            yield p.reshape(t.shape)
    elif t.dtype == torch.bool:
        p = flat.clone()
        p[idx] = ~v
        yield p.reshape(t.shape)
    elif t.dtype == torch.uint8:
        # Large level changes, so that output rounding cannot hide them; one nibble at a time too,
        # since a packed I4 byte's two columns can cancel out (x₀·s₀ ≈ −x₁·s₁) when both move.
        for mask in (0x88, 0x77, 0x11, 0x08, 0x80):
            p = flat.clone()
            p[idx] = int(v) ^ mask
            yield p.reshape(t.shape)
    elif modulus:
        p = flat.clone()
        p[idx] = (int(v) + 1) % modulus
        yield p.reshape(t.shape)
    else:
        for new in (int(v) ^ 64, -int(v) - 1, int(v) + 1 if int(v) < 100 else -int(v)):
            p = flat.clone()
            p[idx] = new
            yield p.reshape(t.shape)


def read(case: Case, masks: dict[int, Tensor]) -> dict[int, Tensor]:
    """Per input buffer, the mask of stored elements whose value changes a written element."""
    base = _run(case, case.values)
    found: dict[int, Tensor] = {}
    for b in dict.fromkeys(case.inputs):
        t = case.values[b]
        hit = torch.zeros(t.numel(), dtype=torch.bool)
        for idx in range(t.numel()):
            for p in _perturbations(t, idx, case.domain.get(b)):
                values = dict(case.values)
                values[b] = p
                try:
                    out = _run(case, values)
                except OpError:
                    hit[idx] = True  # the value is inspected: a perturbation makes the op refuse
                    break
                if any(bool((~_same(out[o], base[o]) & masks[o]).any()) for o in case.outputs):
                    hit[idx] = True
                    break
        found[b] = hit.reshape(t.shape)
    return found
