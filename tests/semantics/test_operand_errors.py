"""Bad operands and params raise OpError naming what is wrong, never a raw torch error (spec §7.1)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import OP_REGISTRY, DType
from amkspec.ir import InstructionKind as K
from amkspec.semantics import OP_SEMANTICS, OpError, pack_int4, quantize
from amkspec.semantics.fused import check_recipe

t = torch.randn
I8, I4 = int(DType.I8), int(DType.I4)

BAD_OPERANDS: list[tuple[str, K, list[torch.Tensor], torch.Tensor, dict[str, Any], str]] = [
    ("GEMV bias shorter than N", K.GEMV_TILE, [t(1, 4), t(3, 4), t(2)], torch.zeros(1, 3), {},
     r"bias \(2,\) does not cover the tile's columns 0\.\.2"),
    ("RMSNORM w of the wrong length", K.RMSNORM, [t(2, 4), t(3)], torch.zeros(2, 4), {},
     r"weight w \(3,\) does not broadcast over x \(2, 4\)"),
    ("ATTENTION_TILE V rows differ from K's", K.ATTENTION_TILE, [t(2, 2), t(3, 2, 2), t(3, 2, 3)],
     torch.zeros(1, 4), {"head_dim": 2}, r"V cache \(3, 2, 3\) differs from K cache \(3, 2, 2\)"),
    ("ATTENTION_TILE K rows are not head_dim", K.ATTENTION_TILE, [t(2, 4), t(3, 2, 2), t(3, 2, 2)],
     torch.zeros(1, 8), {"head_dim": 4}, r"K cache \(3, 2, 2\) rows are not head_dim 4 wide"),
    ("ATTENTION_TILE head_dim = -4 with a scale", K.ATTENTION_TILE, [t(2, 2), t(3, 2, 2), t(3, 2, 2)],
     torch.zeros(1, 4), {"head_dim": -4, "scale": 1.0}, "head_dim must be positive, got -4"),
    ("DEQUANT scales of the wrong rows", K.DEQUANT, [torch.zeros(2, 4, dtype=torch.int8), t(3, 1)],
     torch.zeros(2, 4), {"qdtype": I8, "group": 4},
     r"scales \(3, 1\) is not a row of groups for each of q's 2"),
    ("DEQUANT scales without a group", K.DEQUANT, [torch.zeros(2, 4, dtype=torch.int8), t(2, 0)],
     torch.zeros(2, 4), {"qdtype": I8, "group": 4}, r"table \(2, 0\) holds no group"),
    ("KV_APPEND pos = 'x'", K.KV_APPEND, [t(1, 2, 2), torch.zeros(3, 2, 2)], torch.zeros(3, 2, 2),
     {"pos": "x"}, "param 'pos' must be an integer, got 'x'"),
    ("KV_APPEND pos = inf", K.KV_APPEND, [t(1, 2, 2), torch.zeros(3, 2, 2)], torch.zeros(3, 2, 2),
     {"pos": float("inf")}, "param 'pos' must be an integer, got inf"),
    ("MUL scale = None", K.MUL, [t(2)], torch.zeros(2), {"scale": None},
     "param 'scale' must be a number, got None"),
    ("SOFTMAX dim = []", K.SOFTMAX, [t(2)], torch.zeros(2), {"dim": []}, "param 'dim' must be an integer"),
    ("RMSNORM eps = 'small'", K.RMSNORM, [t(2, 4), t(4)], torch.zeros(2, 4), {"eps": "small"},
     "param 'eps' must be a number, got 'small'"),
    ("ROPE theta = None", K.ROPE, [t(2, 4), torch.tensor([1])], torch.zeros(2, 4),
     {"head_dim": 4, "theta": None}, "param 'theta' must be a number"),
]


@pytest.mark.parametrize(("name", "kind", "inputs", "out", "params", "match"), BAD_OPERANDS,
                         ids=[case[0] for case in BAD_OPERANDS])
def test_a_bad_operand_is_an_op_error_naming_it(
    name: str, kind: K, inputs: list[torch.Tensor], out: torch.Tensor, params: dict[str, Any], match: str,
) -> None:
    with pytest.raises(OpError, match=match):
        OP_SEMANTICS[kind](inputs, [out], params)


def _gemv(q: torch.Tensor, scales: torch.Tensor, qdtype: int, k: int) -> None:
    OP_SEMANTICS[K.GEMV_TILE]([torch.ones(1, k), q, scales], [torch.zeros(1, q.shape[0])],
                              {"qdtype": qdtype, "group": k})


def test_quantized_gemv_refuses_an_unpacked_int4_weight() -> None:
    q = torch.tensor([[1, 2, 3, 4]] * 3, dtype=torch.uint8)  # [N, K] levels, not [N, ceil(K/2)] bytes
    with pytest.raises(OpError, match=r"q \(3, 4\) must hold 2 packed I4 bytes per row for K = 4"):
        _gemv(q, torch.ones(3, 1, dtype=torch.float16), I4, 4)


def test_quantized_gemv_refuses_an_int8_weight_wider_than_k() -> None:
    q = torch.ones(3, 6, dtype=torch.int8)
    with pytest.raises(OpError, match=r"q \(3, 6\) must hold 4 levels per row for K = 4"):
        _gemv(q, torch.ones(3, 1, dtype=torch.float16), I8, 4)


@pytest.mark.parametrize(("bits", "k"), [(4, 5), (4, 8), (8, 5)])
def test_quantized_gemv_accepts_the_stored_width(bits: int, k: int) -> None:
    qw = quantize(torch.randn(3, k), bits, group=k)
    _gemv(qw.q, qw.scales, I4 if bits == 4 else I8, k)


@pytest.mark.parametrize("width", [3, 5])
def test_dequant_refuses_a_q_that_is_neither_packed_nor_levels(width: int) -> None:
    q = torch.zeros(2, width, dtype=torch.uint8)  # out rows of K = 4: packed is 2 bytes, levels 4
    with pytest.raises(OpError, match="neither ceil\\(K/2\\) = 2 packed I4 bytes nor K = 4 levels"):
        OP_SEMANTICS[K.DEQUANT]([q, torch.ones(2, 1)], [torch.zeros(2, 4)], {"qdtype": I4, "group": 4})


def test_dequant_refuses_int8_levels_wider_than_its_output() -> None:
    q = torch.zeros(2, 6, dtype=torch.int8)
    with pytest.raises(OpError, match=r"q \(2, 6\) must hold 4 levels per row for K = 4"):
        OP_SEMANTICS[K.DEQUANT]([q, torch.ones(2, 1)], [torch.zeros(2, 4)], {"qdtype": I8, "group": 4})


def test_dequant_still_unpacks_a_packed_q_and_reads_levels_as_given() -> None:
    levels = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    for q in (pack_int4(levels), levels.to(torch.uint8)):
        out = torch.zeros(2, 4)
        OP_SEMANTICS[K.DEQUANT]([q, torch.ones(2, 1)], [out], {"qdtype": I4, "group": 4})
        expected = levels - 8 if q.shape[-1] == 2 else levels
        assert out.tolist() == expected.float().tolist()


FINAL_THEN_READ = {"steps": [
    {"op": "ADD", "args": [{"in": 0}, {"in": 1}], "out": "final"},
    {"op": "GELU", "args": [{"s": -1}], "out": "final"},
]}


def test_a_recipe_reading_final_as_a_scratch_is_refused_before_any_write() -> None:
    with pytest.raises(OpError, match=r"step 1: \{'s': -1\} names no task input and no scratch"):
        check_recipe(FINAL_THEN_READ, 2)
    out = torch.full((4,), 7.0)
    with pytest.raises(OpError, match="step 1"):
        OP_SEMANTICS[K.FUSED]([torch.ones(4), torch.ones(4)], [out], {"recipe": FINAL_THEN_READ})
    assert out.tolist() == [7.0] * 4


# Any operands and params: an opcode either runs or raises OpError.

_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64,
           torch.bool]
_PARAM_NAMES = sorted({"K", "N_tile", "n_off", "M_tile", "m_off", "qdtype", "group", "head_dim", "n_heads",
                       "n_kv_heads", "kv_start", "kv_len", "scale", "flags", "eps", "hidden", "theta", "dim",
                       "pos", "recipe"} | {p for spec in OP_REGISTRY.values() for p in spec.required_params})
_VALUES = st.one_of(
    st.sampled_from([0, 1, 2, 4, 6, 7]), st.integers(-3, 9), st.floats(allow_nan=True), st.none(),
    st.booleans(),
    st.sampled_from(["x", "final", "3", [], {}, {"steps": []}, [1, 2]]),
)


@st.composite
def _tensor(draw: st.DrawFn) -> torch.Tensor:
    """Small dims from a few values, so that operands often fit each other and the checks past the
    first ones are reached."""
    shape = draw(st.lists(st.sampled_from([1, 2, 4, 0, 3, 6]), max_size=4))
    dtype = draw(st.one_of(st.just(torch.float32), st.sampled_from(_DTYPES)))
    g = torch.Generator().manual_seed(draw(st.integers(0, 1000)))
    return (torch.randn(shape, generator=g) * 4).to(dtype)


@pytest.mark.parametrize("kind", list(K), ids=[k.name for k in K])
@given(inputs=st.lists(_tensor(), max_size=5), outputs=st.lists(_tensor(), min_size=1, max_size=2),
       params=st.dictionaries(st.sampled_from(_PARAM_NAMES), _VALUES, max_size=6))
def test_any_operands_either_run_or_raise_op_error(
    kind: K, inputs: list[torch.Tensor], outputs: list[torch.Tensor], params: dict[str, Any],
) -> None:
    with contextlib.suppress(OpError):  # anything else fails the test
        OP_SEMANTICS[kind](inputs, outputs, params)
