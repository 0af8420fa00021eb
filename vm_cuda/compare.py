"""Kernel-vs-ReferenceVM output comparison and its per-dtype tolerances (spec §8.8).

The tolerances are the oracle's (``amkspec.models.oracle.TOLERANCES``; the lowering guide), keyed
by the dtype of the output being compared; integer and boolean outputs must match exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import torch

from amkspec.ir import DType
from amkspec.models.oracle import DEFAULT_TOLERANCE, TOLERANCES

_DTYPE_OF = {torch.float32: DType.F32, torch.float16: DType.F16, torch.bfloat16: DType.BF16}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) for an output of torch ``dtype``: the oracle's, (0, 0) for non-float outputs."""
    if not dtype.is_floating_point:
        return (0.0, 0.0)
    code = _DTYPE_OF.get(dtype)
    return TOLERANCES[code] if code is not None else DEFAULT_TOLERANCE


@attrs.frozen
class OutputDiff:
    """One output that differs: its name and why."""

    name: str
    reason: str


def compare_outputs(test: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor]) -> list[OutputDiff]:
    """Every way ``test`` differs from ``ref``: keys, shapes, dtypes, values beyond tolerance."""
    diffs = [OutputDiff(k, "missing") for k in ref if k not in test]
    diffs += [OutputDiff(k, "unexpected") for k in test if k not in ref]
    for name in (k for k in ref if k in test):
        t, r = test[name], ref[name]
        if t.shape != r.shape or t.dtype != r.dtype:
            diffs.append(OutputDiff(name, f"{t.dtype}{tuple(t.shape)} vs {r.dtype}{tuple(r.shape)}"))
            continue
        atol, rtol = tolerance(r.dtype)
        if not r.dtype.is_floating_point:
            if not torch.equal(t, r):
                diffs.append(OutputDiff(name, f"{int((t != r).sum())} elements differ"))
            continue
        tf, rf = t.float(), r.float()
        if not torch.allclose(tf, rf, atol=atol, rtol=rtol, equal_nan=True):
            err = float((tf - rf).abs().nan_to_num(float("inf")).max())
            diffs.append(OutputDiff(name, f"max abs err {err:.3g} > atol {atol} + rtol {rtol}·|ref|"))
    return diffs
