"""Canonical codes, sizes, caps, versions, opcode registry and param layout (spec §1.2, §7, §8)."""

from __future__ import annotations

import pytest

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    ABI_VERSION,
    IR_VERSION,
    ON_CHIP_SPACES,
    OP_REGISTRY,
    PARAM_DEFAULTS,
    PARAM_FIELDS,
    PARAM_LAYOUT,
    READONLY_KINDS,
    BufferKind,
    DType,
    InstructionKind,
    MemSpace,
)
from amkspec.ir.enums import INTEGER_DTYPES


def test_versions_and_caps() -> None:
    assert (IR_VERSION, ABI_VERSION) == ("0.2.0", "0.2")
    assert (ABI_MAX_INPUTS, ABI_MAX_OUTPUTS, ABI_MAX_WAITS, ABI_MAX_RANK) == (8, 4, 8, 4)


def test_dtype_codes_and_bits() -> None:
    names = ["F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL"]
    assert [d.name for d in sorted(DType)] == names
    assert [d.value for d in DType] == list(range(10))
    assert [d.bits for d in DType] == [32, 16, 16, 8, 8, 32, 8, 4, 8, 8]


def test_dtype_families() -> None:
    integers = {d.name for d in DType if d.is_integer}
    assert integers == {"I32", "I8", "I4", "U8"} == {d.name for d in INTEGER_DTYPES}
    assert {d.name for d in DType if d.is_float} == {"F32", "F16", "BF16", "F8E4M3", "F8E5M2"}
    assert [d.name for d in DType if not d.is_float and not d.is_integer] == ["BOOL"]


@pytest.mark.parametrize(("count", "nbytes"), [(0, 0), (1, 1), (2, 1), (3, 2), (7, 4), (8, 4)])
def test_i4_nbytes_rounds_up(count: int, nbytes: int) -> None:
    assert DType.I4.nbytes(count) == nbytes
    assert DType.F32.nbytes(count) == 4 * count
    assert DType.BF16.nbytes(count) == 2 * count


def test_space_and_kind_codes() -> None:
    spaces = [("HBM", 0), ("GLOBAL_SCRATCH", 1), ("SMEM", 2), ("REGISTER", 3)]
    assert [(m.name, m.value) for m in MemSpace] == spaces
    kinds = [("WEIGHT", 0), ("ACTIVATION", 1), ("KV_CACHE", 2), ("IO_INPUT", 3), ("IO_OUTPUT", 4),
             ("CONST", 5)]
    assert [(k.name, k.value) for k in BufferKind] == kinds
    assert {BufferKind.WEIGHT, BufferKind.CONST, BufferKind.IO_INPUT} == READONLY_KINDS
    assert {MemSpace.SMEM, MemSpace.REGISTER} == ON_CHIP_SPACES


def test_opcode_codes() -> None:
    names = [
        "NOP", "COPY", "EMBED", "RMSNORM", "LAYERNORM", "GEMV_TILE", "GEMM_TILE", "ATTENTION_TILE", "ROPE",
        "SILU_MUL", "GELU", "ADD", "MUL", "DEQUANT", "SOFTMAX", "ALLREDUCE_SHARD", "KV_APPEND",
        "SAMPLE_ARGMAX", "ATTENTION_COMBINE", "FUSED",
    ]
    assert [(k.name, k.value) for k in InstructionKind] == [(n, i) for i, n in enumerate(names)]


def test_registry_covers_every_opcode_within_the_abi_caps() -> None:
    assert set(OP_REGISTRY) == set(InstructionKind)
    for kind, spec in OP_REGISTRY.items():
        assert spec.kind is kind
        assert 0 <= spec.min_inputs <= ABI_MAX_INPUTS
        assert spec.max_inputs == -1 or spec.min_inputs <= spec.max_inputs <= ABI_MAX_INPUTS
        assert spec.n_outputs <= ABI_MAX_OUTPUTS
    assert OP_REGISTRY[InstructionKind.ATTENTION_TILE].required_params == (
        "head_dim", "kv_start", "kv_len", "scale", "n_heads", "n_kv_heads")
    assert OP_REGISTRY[InstructionKind.GEMV_TILE].required_params == ("K", "N_tile", "n_off")


def test_param_fields_and_binary_layout() -> None:
    assert len(PARAM_FIELDS) == len(PARAM_LAYOUT) == 22
    assert set(PARAM_LAYOUT) == set(PARAM_FIELDS)
    offsets = {name: 4 * i for i, name in enumerate(PARAM_LAYOUT)}
    picked = (offsets["K"], offsets["group"], offsets["flags"], offsets["eps"], offsets["theta"])
    assert picked == (0, 64, 68, 76, 84)
    assert {k for k, t in PARAM_FIELDS.items() if t == "f"} == {"eps", "scale", "theta"}
    assert PARAM_DEFAULTS[InstructionKind.RMSNORM]["eps"] == 1e-6
    assert PARAM_DEFAULTS[InstructionKind.LAYERNORM]["eps"] == 1e-5
