"""Binding weights, inputs and KV caches: checks, lossless casts, no mutation of the caller (spec §2.4)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from amkspec.ir import BufferKind, DType, MegakernelProgram, MemSpace, Page, PageAllocation, ProgramBuilder
from amkspec.programs.small import kv_snapshot, scale_chain
from amkspec.semantics import pack_int4
from amkspec.vm import BindingError, ReferenceVM, RefusedProgram
from tests.vm.strategies import K


def _gather(dtype: DType = DType.F32, ids: DType = DType.I32) -> MegakernelProgram:
    b = ProgramBuilder()
    tok = b.new_buffer("token_id", BufferKind.IO_INPUT, ids, (2,))
    table = b.new_buffer("table", BufferKind.WEIGHT, dtype, (5, 3), source="embed.weight")
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, dtype, (2, 3))
    b.add_task(K.EMBED, [tok, table], [out], params={"hidden": 3}, label="embed")
    return b.build()


TABLE = np.arange(15, dtype=np.float32).reshape(5, 3)


def test_weights_bind_by_source_and_inputs_by_name() -> None:
    out = ReferenceVM(_gather()).run({"embed.weight": TABLE}, {"token_id": np.array([4, 1], dtype=np.int64)})
    assert out["out"].tolist() == TABLE[[4, 1]].tolist()


@pytest.mark.parametrize(("weights", "inputs", "match"), [
    ({}, {"token_id": [0, 1]}, "missing weights: 'embed.weight'"),
    ({"embed.weight": TABLE}, {}, "missing inputs: 'token_id'"),
    ({"embed.weight": TABLE}, {"token_id": [0, 1, 2]}, r"shape \(3,\) but buffer 'token_id' is \(2,\)"),
    ({"embed.weight": TABLE.T}, {"token_id": [0, 1]}, "weight 'embed.weight': shape"),
    ({"embed.weight": TABLE}, {"token_id": [0.0, 1.0]}, "float64 does not convert losslessly"),
    ({"embed.weight": TABLE}, {"token_id": np.array([0, 2**40])}, "int64 does not convert losslessly"),
    ({"embed.weight": TABLE}, {"token_id": ["a", "b"]}, "not a numeric array"),
    ({"embed.weight": TABLE.astype(np.complex64)}, {"token_id": [0, 1]}, "complex64 does not convert"),
])
def test_bad_bindings_are_clear_errors(weights: dict[str, Any], inputs: dict[str, Any], match: str) -> None:
    with pytest.raises(BindingError, match=match):
        ReferenceVM(_gather()).run(weights, inputs)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16])
def test_half_buffers_accept_float32_and_round(dtype: DType) -> None:
    table = TABLE + np.float32(1 / 3)
    out = ReferenceVM(_gather(dtype)).run({"embed.weight": table}, {"token_id": [0, 2]})
    expected = torch.from_numpy(table[[0, 2]]).to(out["out"].dtype)
    assert torch.equal(out["out"], expected)


def test_int4_weights_bind_packed() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 3))
    q = b.new_buffer("w.q", BufferKind.WEIGHT, DType.I4, (2, 3))
    s = b.new_buffer("w.scales", BufferKind.WEIGHT, DType.F16, (2, 1))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 2))
    b.add_task(K.GEMV_TILE, [x, q, s], [y], params={"K": 3, "N_tile": 2, "n_off": 0, "qdtype": 7, "group": 3})
    vm = ReferenceVM(b.build())
    packed = pack_int4(torch.tensor([[9, 10, 11], [7, 8, 0]])).numpy()
    out = vm.run({"w.q": packed, "w.scales": np.ones((2, 1), np.float32)}, {"x": [[1.0, 1.0, 1.0]]})
    assert out["y"].tolist() == [[1 + 2 + 3, -1 + 0 - 8]]
    with pytest.raises(BindingError, match="packed I4"):
        vm.run({"w.q": np.zeros((2, 3), np.uint8), "w.scales": np.ones((2, 1))}, {"x": [[1.0, 1.0, 1.0]]})


def test_the_callers_tensors_are_never_written() -> None:
    vm = ReferenceVM(kv_snapshot(pos=1))
    kv = {"kc": torch.full((4, 1, 2), 5.0)}
    x = np.array([[[1.0, 2.0]]], dtype=np.float32)
    out = vm.run({}, {"x": x}, kv)
    assert torch.equal(kv["kc"], torch.full((4, 1, 2), 5.0)) and x.tolist() == [[[1.0, 2.0]]]
    assert out["kc"][1].tolist() == [[1.0, 2.0]] and out["kc"][0].tolist() == [[5.0, 5.0]]
    out["kc"].zero_()
    again = vm.run({}, {"x": x})
    assert again["kc"][0].tolist() == [[5.0, 5.0]]


def test_kv_persists_across_launches_until_reset() -> None:
    vm = ReferenceVM(kv_snapshot(pos=0))
    vm.run({}, {"x": [[[1.0, 1.0]]]}, {"kc": np.full((4, 1, 2), 3.0, np.float32)})
    second = vm.run({}, {"x": [[[2.0, 2.0]]]})
    assert second["snapshot"][0].tolist() == [[2.0, 2.0]] and second["snapshot"][3].tolist() == [[3.0, 3.0]]
    vm.reset()
    third = vm.run({}, {"x": [[[2.0, 2.0]]]})
    assert third["snapshot"][3].tolist() == [[0.0, 0.0]]


def test_outputs_and_activations_start_as_zeros_every_launch() -> None:
    vm = ReferenceVM(scale_chain())
    a = vm.run({}, {"x": [[1.0, 1.0, 1.0, 1.0]]})
    b = vm.run({}, {"x": [[2.0, 2.0, 2.0, 2.0]]})
    assert a["z"] is not b["z"] and a["z"].tolist() == [[6.0] * 4] and b["z"].tolist() == [[12.0] * 4]


def test_a_rejected_program_is_refused_with_the_report() -> None:
    program = scale_chain()
    program.tasks[1].waits[0].threshold = 3
    with pytest.raises(RefusedProgram) as info:
        ReferenceVM(program)
    assert info.value.result.ok is False and "validate() rejected" in str(info.value)
    assert info.value.report()


def test_a_paged_int4_activation_with_odd_rows_binds() -> None:
    """Packed I4 pads every row, so its storage may exceed ``nbytes``; the page view must still fit."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.I4, (2, 3))
    a = b.new_buffer("a", BufferKind.ACTIVATION, DType.I4, (2, 3))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.I4, (2, 3))
    first = b.add_task(K.COPY, [x], [a], label="in")
    b.add_task(K.COPY, [a], [y], waits=[b.after(first)], label="out")
    program = b.build(pages=PageAllocation({a: 0}, [Page(0, MemSpace.HBM, 3)]))
    assert program.buffers[a].nbytes == 3
    packed = pack_int4(torch.tensor([[1, 2, 3], [4, 5, 6]]))
    out = ReferenceVM(program).run({}, {"x": packed})
    assert torch.equal(out["y"], packed)


IDS = np.array([4, 1])
NOT_DENSE = {
    "sparse": lambda t: t.to_sparse(),
    "meta": lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta"),
}


@pytest.mark.parametrize("make", NOT_DENSE.values(), ids=NOT_DENSE.keys())
@pytest.mark.parametrize("slot", ["weight", "input"])
@pytest.mark.parametrize("launch", ["first", "second"])
def test_a_tensor_without_dense_values_is_a_binding_error_at_every_launch(
    make: Any, slot: str, launch: str
) -> None:
    vm = ReferenceVM(_gather())
    if launch == "second":  # the VM's kept frame binds from here on
        vm.run({"embed.weight": TABLE}, {"token_id": IDS})
    weights = {"embed.weight": make(torch.from_numpy(TABLE)) if slot == "weight" else TABLE}
    inputs = {"token_id": make(torch.from_numpy(IDS)) if slot == "input" else IDS}
    name = "embed.weight" if slot == "weight" else "token_id"
    with pytest.raises(BindingError, match=f"{slot} '{name}': a .* tensor, not a dense array"):
        vm.run(weights, inputs)


@pytest.mark.parametrize("where", ["weights", "inputs", "kv"])
def test_weights_inputs_and_kv_must_be_mappings(where: str) -> None:
    args: dict[str, Any] = {"weights": {"embed.weight": TABLE}, "inputs": {"token_id": IDS}, "kv": None}
    args[where] = [TABLE]
    with pytest.raises(BindingError, match=f"{where} must map names to arrays, not a list"):
        ReferenceVM(_gather()).run(**args)
