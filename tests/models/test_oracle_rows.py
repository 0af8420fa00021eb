"""The oracle's verdict needs every row's argmax to agree (the lowering guide, "The decode loop and
the oracle"; stricter than the original's 99%, see the lowering differences)."""

from __future__ import annotations

import pytest
import torch

from amkspec.ir import DType
from amkspec.models import compare_logits

pytestmark = pytest.mark.numerics


def _near_tie(rows: int) -> torch.Tensor:
    """Logits whose argmax is 3 in every row, with 5 a close second (1e-6 behind)."""
    eager = torch.zeros(rows, 256)
    eager[:, 3] = 1.0
    eager[:, 5] = 1.0 - 1e-6
    return eager


@pytest.mark.parametrize("rows", [1, 2, 100, 1000])
def test_one_row_with_another_argmax_fails(rows: int) -> None:
    eager = _near_tie(rows)
    vm = eager.clone()
    vm[rows - 1, 5] = 1.0 + 1e-6  # within the F32 tolerance, but row rows-1 now picks token 5
    check = compare_logits(vm, eager, DType.F32)
    assert check.max_abs_err < check.atol
    assert not check.passed
    assert check.top1_agreement == pytest.approx(1 - 1 / rows)


@pytest.mark.parametrize("rows", [1, 100])
def test_every_row_agreeing_passes(rows: int) -> None:
    eager = _near_tie(rows)
    check = compare_logits(eager + 5e-7, eager, DType.F32)
    assert check.passed and check.top1_agreement == 1.0


def test_no_rows_is_no_agreement() -> None:
    assert not compare_logits(torch.zeros(0, 8), torch.zeros(0, 8)).passed
