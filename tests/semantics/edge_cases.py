"""The edge-value table (``amkspec.semantics.edges.EDGE_CASES``) as operands, at any row count.

A case's row ``x`` is repeated over ``rows`` rows (so an elementwise op sees ``rows · len(x)``
elements, a row op ``rows`` rows): the result must not depend on the element count, which is
what decides torch's vector path.
"""

from __future__ import annotations

from typing import Any

import torch

from amkspec.ir import InstructionKind
from amkspec.semantics import torch_dtype
from amkspec.semantics.edges import EDGE_CASES, EdgeCase

K = InstructionKind
ROW_COUNTS = (1, 3, 16)
"""Rows per case: one row, a few, and enough elements for every vector width."""
NORMS = (K.RMSNORM, K.LAYERNORM)


def case_id(case: EdgeCase) -> str:
    return f"{case.kind.name}-{case.dtype.name}-{EDGE_CASES.index(case)}"


def x_of(case: EdgeCase, rows: int) -> torch.Tensor:
    return torch.tensor([case.x] * rows, dtype=torch.float32)


def other_of(case: EdgeCase, rows: int) -> torch.Tensor | None:
    """The second input: a weight ``[H]`` for the norms, a ``[rows, H]`` input otherwise."""
    if case.other is None:
        return None
    if case.kind in NORMS:
        return torch.tensor(case.other, dtype=torch.float32)
    return torch.tensor([case.other] * rows, dtype=torch.float32)


def params_of(case: EdgeCase) -> dict[str, Any]:
    """The norms' required params, at their defaults."""
    if case.kind not in NORMS:
        return {}
    return {"hidden": len(case.x), "eps": 1e-6 if case.kind is K.RMSNORM else 1e-5}


def expected(case: EdgeCase, rows: int) -> torch.Tensor:
    """The table's result as float32 values (the output's values, whatever its dtype)."""
    return torch.tensor([case.out] * rows, dtype=torch.float64).to(torch_dtype(case.dtype)).float()


def assert_table_value(got: torch.Tensor, case: EdgeCase, rows: int) -> None:
    """``got`` holds exactly the table's values (NaN equals NaN; zeros of either sign are equal)."""
    want = expected(case, rows)
    assert got.dtype == torch_dtype(case.dtype)
    values = got.float().reshape(want.shape)
    assert torch.equal(torch.isnan(values), torch.isnan(want)), f"{case.rule}: {values} != {want}"
    both = ~torch.isnan(want)
    assert torch.equal(values[both], want[both]), f"{case.rule}: {values} != {want}"


def single_values(case: EdgeCase) -> list[EdgeCase]:
    """An elementwise case split into one-element cases (torch's scalar path)."""
    if case.kind not in (K.GELU, K.SILU_MUL, K.COPY):
        return []
    return [
        EdgeCase(case.kind, (x,), (y,), case.rule, case.dtype, None if case.other is None else (up,))
        for x, y, up in zip(case.x, case.out, case.other or case.x, strict=True)
    ]
