"""Edge values on both VMs (spec §8.8: the megakernel reproduces the ReferenceVM).

float -> integer casts of NaN, ±inf and out-of-range values (vm_cuda/ops/dtype.cuh
``amk_cvt_i32`` / ``amk_cvt_i64``, the rule of x86-64 torch) and GELU of ±inf and NaN
(elementwise.cuh ``amk_gelu``), every integer output dtype and every float output dtype,
diffed element for element against the ReferenceVM.
"""

from __future__ import annotations

import platform

import pytest
import torch

from amkspec.ir import DType, InstructionKind
from amkspec.semantics import torch_dtype
from tests.vm_cuda.test_ops import FLOATS, Operand, check, out

K = InstructionKind
INF, NAN = float("inf"), float("nan")
INTEGER_OUTPUTS = (DType.I32, DType.I8, DType.U8, DType.BOOL)
FLOAT_SOURCES = (*FLOATS, DType.F8E4M3, DType.F8E5M2)
EDGES = [
    NAN, INF, -INF, 3e9, -3e9, 1e20, -1e20, 2.0**31, -(2.0**31), -(2.0**31) - 256, 2147483520.0,
    2.7, -2.7, 300.5, -129.5, 255.9, 65504.0, 448.0, 1e-8, -0.0,
]  # fmt: skip
X86 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="torch's out-of-range float->int casts are C++ undefined behaviour; "
    "the device copies x86-64 (cvtt* gives the type's minimum), other hosts differ",
)


def edges(dtype: DType) -> torch.Tensor:
    return torch.tensor([EDGES], dtype=torch.float64).to(torch_dtype(dtype))


@X86
@pytest.mark.parametrize("dst", INTEGER_OUTPUTS)
@pytest.mark.parametrize("src", FLOAT_SOURCES)
def test_copy_float_to_integer_edges(src: DType, dst: DType) -> None:
    n = len(EDGES)
    check(K.COPY, [Operand("x", src, (1, n), value=edges(src))], [out("o", dst, (1, n))], {}, exact=True)


@X86
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


@X86
@pytest.mark.parametrize("dst", [DType.I8, DType.U8])
def test_int32_to_byte_wraps(dst: DType) -> None:
    src = torch.tensor([[2**31 - 1, -(2**31), 300, -300, 255, 256, -129, 128]], dtype=torch.int32)
    check(K.COPY, [Operand("x", DType.I32, (1, 8), value=src)], [out("o", dst, (1, 8))], {}, exact=True)


@X86
def test_out_of_range_gives_the_minimum() -> None:
    """The documented rule: NaN / ±inf / out of range -> INT32_MIN in an I32, 0 in an I8 or U8."""
    bad = torch.tensor([[NAN, INF, -INF, 3e9, -1e20]])
    ref = check(K.COPY, [Operand("x", DType.F32, (1, 5), value=bad)], [out("o", DType.I32, (1, 5))], {})
    assert ref["o"].tolist() == [[-(2**31)] * 5]
    for dst in (DType.I8, DType.U8):
        ref = check(K.COPY, [Operand("x", DType.F32, (1, 5), value=bad)], [out("o", dst, (1, 5))], {})
        assert ref["o"].tolist() == [[0] * 5]


GELU_EDGES = [1e30, -1e30, INF, -INF, NAN, -20.0, 3.0, 0.0]


@pytest.mark.parametrize("dst", FLOAT_SOURCES)
@pytest.mark.parametrize("src", [DType.F32, DType.F16])
def test_gelu_of_infinities_and_nan(src: DType, dst: DType) -> None:
    """torch's vectorised GELU gives NaN for +inf: so does the device (any input of >= 2 elements)."""
    n = len(GELU_EDGES)
    x = torch.tensor([GELU_EDGES]).to(torch_dtype(src))
    ref = check(K.GELU, [Operand("x", src, (1, n), value=x)], [out("o", dst, (1, n))], {})
    assert torch.isnan(ref["o"].float()[0, 2])


@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_gelu_of_one_element_plus_inf(shape: tuple[int, ...]) -> None:
    """torch's scalar path (a one-element input) gives GELU(+inf) = +inf: so does the device."""
    x = torch.full(shape, INF)
    ref = check(K.GELU, [Operand("x", DType.F32, shape, value=x)], [out("o", DType.F32, shape)], {})
    assert ref["o"].flatten().tolist() == [INF]
