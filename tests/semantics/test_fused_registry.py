"""FUSED recipes against the unfused sequence, and the registry's completeness (spec §7)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch

from amkspec.ir import OP_REGISTRY, DType, InstructionKind
from amkspec.ir import InstructionKind as K
from amkspec.semantics import FAMILIES, OP_SEMANTICS, SEMANTICS, OpError, torch_dtype
from tests.semantics.helpers import rand, run

pytestmark = pytest.mark.numerics


def _gemv_add_recipe(out: Any = "final") -> dict[str, Any]:
    return {"steps": [
        {"op": int(K.GEMV_TILE), "args": [{"in": 0}, {"in": 1}], "out": 0, "params": {"K": 4},
         "out_shape": [1, 3], "out_dtype": "float32"},
        {"op": "ADD", "args": [{"s": 0}, {"in": 2}], "out": out},
    ]}


def test_fused_equals_the_unfused_sequence_bit_for_bit() -> None:
    x, w, r = rand(1, 4, seed=1), rand(3, 4, seed=2), rand(1, 3, seed=3)
    fused = run(K.FUSED, [x, w, r], torch.zeros(1, 3), recipe=_gemv_add_recipe())
    tmp = run(K.GEMV_TILE, [x, w], torch.zeros(1, 3), K=4)
    assert torch.equal(fused, run(K.ADD, [tmp, r], torch.zeros(1, 3)))


def test_fused_minus_one_means_final() -> None:
    x, w, r = rand(1, 4, seed=1), rand(3, 4, seed=2), rand(1, 3, seed=3)
    a = run(K.FUSED, [x, w, r], torch.zeros(1, 3), recipe=_gemv_add_recipe(-1))
    assert torch.equal(a, run(K.FUSED, [x, w, r], torch.zeros(1, 3), recipe=_gemv_add_recipe()))


def test_scratch_dtype_is_honoured() -> None:
    x = torch.tensor([[1.0001, 2.0]])
    recipe = {"steps": [
        {"op": int(K.COPY), "args": [{"in": 0}], "out": 0, "out_dtype": "float16"},
        {"op": int(K.COPY), "args": [{"s": 0}], "out": "final"},
    ]}
    out = run(K.FUSED, [x], torch.zeros(1, 2), recipe=recipe)
    assert torch.equal(out, x.half().float())


@pytest.mark.parametrize(("recipe", "match"), [
    ({}, "steps"),
    ({"steps": []}, "steps"),
    ({"steps": [{"op": 99, "args": [{"in": 0}], "out": "final"}]}, "opcode"),
    ({"steps": [{"op": 19, "args": [{"in": 0}], "out": "final"}]}, "nested"),
    ({"steps": [{"op": 1, "args": [{"in": 5}], "out": "final"}]}, "names no"),
    ({"steps": [{"op": 1, "args": [{"s": 0}], "out": "final"}]}, "names no"),
    ({"steps": [{"op": 1, "args": [{"in": 0}], "out": 0}]}, "final"),
    ({"steps": [{"op": 1, "args": [{"in": 0}], "out": "x"}]}, "out must"),
    ({"steps": [{"op": 1, "args": [{"in": 0}], "out": "final", "out_dtype": "int4"}]}, "out_dtype"),
    ({"steps": ["GEMV"]}, "object"),
])
def test_malformed_recipes_are_op_errors(recipe: Any, match: str) -> None:
    with pytest.raises(OpError, match=match):
        run(K.FUSED, [torch.zeros(1, 2)], torch.zeros(1, 2), recipe=recipe)


def test_every_opcode_has_semantics_and_a_description() -> None:
    assert set(OP_SEMANTICS) == set(InstructionKind) == set(OP_REGISTRY)
    for kind, sem in SEMANTICS.items():
        assert sem.kind is kind and sem.family in FAMILIES
        assert all([sem.inputs, sem.outputs, sem.params, sem.shapes, sem.formula])
    assert inspect.unwrap(OP_SEMANTICS[K.GEMV_TILE]) is inspect.unwrap(OP_SEMANTICS[K.GEMM_TILE])


def test_dtype_map() -> None:
    assert torch_dtype(DType.F32) is torch.float32 and torch_dtype(DType.BF16) is torch.bfloat16
    assert torch_dtype(DType.I4) is torch.uint8 and torch_dtype(DType.I32) is torch.int32
    assert torch_dtype(DType.F8E4M3) is getattr(torch, "float8_e4m3fn", torch.bfloat16)
