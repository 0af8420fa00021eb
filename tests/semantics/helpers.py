"""Shared helpers of the opcode tests: run one op, dtype tolerances."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from amkspec.ir import InstructionKind
from amkspec.semantics import OP_SEMANTICS

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
"""Relative tolerance per storage dtype (a few units in the last place of each)."""


def run(kind: InstructionKind, inputs: list[torch.Tensor], out: torch.Tensor, **params: Any) -> torch.Tensor:
    """Run one opcode into ``out`` and return it."""
    OP_SEMANTICS[kind](inputs, [out], params)
    return out


def close(actual: torch.Tensor, expected: np.ndarray, dtype: torch.dtype, scale: float = 1.0) -> None:
    """``actual`` (any dtype) matches the float64 ``expected`` within the dtype's rounding."""
    tol = TOL[dtype] * max(scale, 1.0)
    np.testing.assert_allclose(actual.double().numpy(), expected, rtol=tol, atol=tol)


def rand(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Normal samples, rounded to ``dtype`` (so the float64 reference sees the same inputs)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)
