"""Edge values on both VMs (spec §7.10; §8.8: the megakernel reproduces the ReferenceVM).

Every row of the edge-value table (``amkspec.semantics.edges.EDGE_CASES``: GELU, SiLU, SOFTMAX,
the norms at ±inf, NaN and overflow, float → integer and float narrowing stores) runs on the
megakernel's CPU build and on the ReferenceVM, at several row counts and one value at a time; both
must give the table's values. Float → integer stores are also diffed for every float source
dtype. No host decides these values, so nothing here skips on any machine.
"""

from __future__ import annotations

import os

import pytest
import torch

from amkspec.ir import BufferKind, DType, InstructionKind
from amkspec.semantics import torch_dtype
from amkspec.semantics.edges import EDGE_CASES, EdgeCase
from tests.semantics.edge_cases import (
    NORMS,
    ROW_COUNTS,
    assert_table_value,
    case_id,
    other_of,
    params_of,
    single_values,
    x_of,
)
from tests.vm_cuda.test_ops import FLOATS, Operand, build, check, out
from vm_cuda import MegakernelVM
from vm_cuda.cuda import unavailable_reason

pytestmark = pytest.mark.numerics

K = InstructionKind
INF, NAN = float("inf"), float("nan")
INTEGER_OUTPUTS = (DType.I32, DType.I8, DType.U8, DType.BOOL)
FLOAT_SOURCES = (*FLOATS, DType.F8E4M3, DType.F8E5M2)
EDGES = [
    NAN, INF, -INF, 3e9, -3e9, 1e20, -1e20, 2.0**31, -(2.0**31), -(2.0**31) - 256, 2147483520.0,
    2.7, -2.7, 300.5, -129.5, 255.9, 65504.0, 448.0, 1e-8, -0.0,
]  # fmt: skip


def _operands(case: EdgeCase, rows: int) -> tuple[list[Operand], list[Operand]]:
    x, other = x_of(case, rows), other_of(case, rows)
    ins = [Operand("x", DType.F32, tuple(x.shape), value=x)]
    if other is not None:
        kind = BufferKind.WEIGHT if case.kind in NORMS else BufferKind.IO_INPUT
        ins.append(Operand("y", DType.F32, tuple(other.shape), kind, other))
    return ins, [out("o", case.dtype, tuple(x.shape))]


def _both(case: EdgeCase, rows: int, threads: int = 4) -> None:
    ins, outs = _operands(case, rows)
    ref = check(case.kind, ins, outs, params_of(case), threads)
    assert_table_value(ref["o"], case, rows)


@pytest.mark.parametrize("rows", ROW_COUNTS)
@pytest.mark.parametrize("case", EDGE_CASES, ids=case_id)
def test_both_vms_give_the_table(case: EdgeCase, rows: int) -> None:
    """``check`` diffs the VMs (exactly for COPY, within tolerance otherwise, NaN = NaN); the
    reference, and so the megakernel, must hold the table's values."""
    _both(case, rows)


@pytest.mark.parametrize("threads", [1, 8])
@pytest.mark.parametrize("case", [c for c in EDGE_CASES if c.kind in (*NORMS, K.SOFTMAX)], ids=case_id)
def test_row_statistics_on_every_reduction_path(case: EdgeCase, threads: int) -> None:
    """Few rows: the block reduces each row; many rows (16 ≥ threads): a thread per row."""
    _both(case, 16, threads)


@pytest.mark.parametrize(
    "case", [c for case in EDGE_CASES for c in single_values(case)], ids=lambda c: f"{c.kind.name}-{c.x[0]}"
)
def test_one_element_gives_the_table(case: EdgeCase) -> None:
    _both(case, 1)


def edges(dtype: DType) -> torch.Tensor:
    return torch.tensor([EDGES], dtype=torch.float64).to(torch_dtype(dtype))


@pytest.mark.parametrize("dst", INTEGER_OUTPUTS)
@pytest.mark.parametrize("src", FLOAT_SOURCES)
def test_copy_float_to_integer_edges(src: DType, dst: DType) -> None:
    n = len(EDGES)
    check(K.COPY, [Operand("x", src, (1, n), value=edges(src))], [out("o", dst, (1, n))], {}, exact=True)


@pytest.mark.parametrize("dst", INTEGER_OUTPUTS)
def test_float_op_result_to_integer_edges(dst: DType) -> None:
    """A float32 result (ADD x + 0) stored into an integer output."""
    n = len(EDGES)
    zero = torch.zeros(1, n)
    ins = [
        Operand("x", DType.F32, (1, n), value=edges(DType.F32)),
        Operand("z", DType.F32, (1, n), value=zero),
    ]
    check(K.ADD, ins, [out("o", dst, (1, n))], {}, exact=True)


@pytest.mark.parametrize("dst", [DType.I8, DType.U8])
def test_int32_to_byte_wraps(dst: DType) -> None:
    src = torch.tensor([[2**31 - 1, -(2**31), 300, -300, 255, 256, -129, 128]], dtype=torch.int32)
    check(K.COPY, [Operand("x", DType.I32, (1, 8), value=src)], [out("o", dst, (1, 8))], {}, exact=True)


GPU_REASON = unavailable_reason()


@pytest.mark.gpu
@pytest.mark.parametrize("case", EDGE_CASES, ids=case_id)
def test_the_gpu_gives_the_table(case: EdgeCase) -> None:
    """The same device code compiled by nvcc, on a GPU (skipped without one, failed under
    ``AMK_REQUIRE_GPU=1``)."""
    if GPU_REASON is not None:
        if os.environ.get("AMK_REQUIRE_GPU") == "1":
            pytest.fail(f"AMK_REQUIRE_GPU=1 but no GPU path: {GPU_REASON}")
        pytest.skip(f"no GPU path: {GPU_REASON}")
    ins, outs = _operands(case, 16)
    prog, weights, inputs, kv = build(case.kind, ins, outs, params_of(case))
    assert_table_value(MegakernelVM(prog, "cuda").run(weights, inputs, kv)["o"].cpu(), case, 16)

