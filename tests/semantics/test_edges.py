"""The edge-value table (spec §7.10) on the reference functions and their prepared forms, at every
row count and one value at a time, and the float → integer rule against a model of it in Python.

These values are the spec's, not the host's: the module runs again under
``ATEN_CPU_CAPABILITY=default`` in CI (the ``numerics`` marker), so a value that comes from one
of torch's vector paths fails on every machine.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from amkspec.semantics import OP_SEMANTICS, torch_dtype
from amkspec.semantics.edges import EDGE_CASES, INT32_MIN, INT64_MIN, EdgeCase, to_integer
from amkspec.semantics.fast import prepare
from tests.semantics.edge_cases import (
    ROW_COUNTS,
    assert_table_value,
    case_id,
    other_of,
    params_of,
    single_values,
    x_of,
)

pytestmark = pytest.mark.numerics


def _run(case: EdgeCase, rows: int, prepared: bool = False) -> torch.Tensor:
    x, other = x_of(case, rows), other_of(case, rows)
    inputs = [x] if other is None else [x, other]
    out = torch.zeros(x.shape, dtype=torch_dtype(case.dtype))
    if prepared:
        step = prepare(case.kind, inputs, [out], params_of(case))
        assert step is not None, "the prepared form declined the case"
        step()
    else:
        OP_SEMANTICS[case.kind](inputs, [out], params_of(case))
    return out


@pytest.mark.parametrize("rows", ROW_COUNTS)
@pytest.mark.parametrize("case", EDGE_CASES, ids=case_id)
def test_the_reference_gives_the_table(case: EdgeCase, rows: int) -> None:
    assert_table_value(_run(case, rows), case, rows)


@pytest.mark.parametrize(
    "case", [c for case in EDGE_CASES for c in single_values(case)], ids=lambda c: f"{c.kind.name}-{c.x[0]}"
)
def test_one_element_gives_the_table(case: EdgeCase) -> None:
    """A one-element input takes torch's scalar path (GELU(+inf) differed there)."""
    assert_table_value(_run(case, 1), case, 1)


PREPARED = [c for c in EDGE_CASES if c.kind.name in ("RMSNORM", "SILU_MUL")]


@pytest.mark.parametrize("rows", ROW_COUNTS)
@pytest.mark.parametrize("case", PREPARED, ids=case_id)
def test_the_prepared_forms_give_the_table(case: EdgeCase, rows: int) -> None:
    assert_table_value(_run(case, rows, prepared=True), case, rows)


def _model(v: float, dtype: torch.dtype) -> int:
    """The rule in plain Python (``edges`` module doc)."""
    via32 = dtype in (torch.int32, torch.int8)
    low, high, minimum = (-(2**31) - 1, 2**31, INT32_MIN) if via32 else (-(2**63) - 1, 2**63, INT64_MIN)
    n = math.trunc(v) if math.isfinite(v) else None
    n = n if n is not None and low < n < high else minimum
    if dtype == torch.int8:
        return (n & 0xFF) - 256 * ((n & 0xFF) > 127)
    return n & 0xFF if dtype == torch.uint8 else n


_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-(2.0**64), 2.0**64),
    st.sampled_from([2.0**31, -(2.0**31), 2.0**31 - 128, -(2.0**31) - 1, 2.0**63, -(2.0**63), 255.5, -0.0]),
)


@given(st.lists(_FLOATS, min_size=1, max_size=40), st.sampled_from([torch.int32, torch.int8, torch.uint8,
                                                                    torch.int64]))
def test_float_to_integer_follows_the_rule(values: list[float], dtype: torch.dtype) -> None:
    got = to_integer(torch.tensor(values, dtype=torch.float64), dtype)
    assert got.dtype == dtype
    assert got.tolist() == [_model(v, dtype) for v in values]
