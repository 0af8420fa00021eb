"""The original implementation's decode steps replayed on the ReferenceVM (OPS_FACTS §10).

Programs, weights, inputs and the outputs of the original ReferenceVM, bundled in
``tests/fixtures/amk`` (README there): step k+1 starts from step k's KV caches.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

from amkspec.ir import MegakernelProgram, load, loads
from amkspec.vm import ReferenceVM, SeededRandom
from tests.conftest import FIXTURES

pytestmark = pytest.mark.numerics

TOL = 1e-5
KV = ("L0.kcache", "L0.vcache")
Data = tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]


def _program(step: int) -> MegakernelProgram:
    if step == 0:
        return load(FIXTURES / "toy1L__default.json")
    return loads(gzip.decompress((FIXTURES / f"toy1L__default.pos{step}.json.gz").read_bytes()).decode())


@pytest.fixture(scope="module")
def data() -> Data:
    weights = dict(np.load(FIXTURES / "toy-1L.weights.npz"))
    inputs = dict(np.load(FIXTURES / "toy1L__default.inputs.npz"))
    expected = dict(np.load(FIXTURES / "toy1L__default.expected.npz"))
    return weights, inputs, expected


def _steps(expected: dict[str, np.ndarray]) -> int:
    return len({key.split("__")[0] for key in expected})


@pytest.mark.parametrize("policy", [None, SeededRandom(3)])
def test_decode_steps_match_the_original(data: Data, policy: SeededRandom | None) -> None:
    weights, inputs, expected = data
    steps = _steps(expected)
    assert steps == 3
    kv = None
    for k in range(steps):
        vm = ReferenceVM(_program(k), policy=policy)
        feed = {name: inputs[f"s{k}__{name}"] for name in ("token_id", "pos", "reshape_id0")}
        out = vm.run(weights, feed, kv)
        for name in ("logits", *KV):
            want = torch.from_numpy(expected[f"s{k}__{name}"])
            torch.testing.assert_close(out[name], want, atol=TOL, rtol=TOL)
        kv = {name: out[name] for name in KV}
        if k + 1 < steps:
            assert int(out["logits"].argmax()) == int(inputs[f"s{k + 1}__token_id"][0])


def test_one_vm_carries_its_kv_between_launches(data: Data) -> None:
    weights, inputs, expected = data
    vm0, vm1 = ReferenceVM(_program(0)), ReferenceVM(_program(1))
    first = vm0.run(weights, {n: inputs[f"s0__{n}"] for n in ("token_id", "pos", "reshape_id0")})
    kv = {name: first[name] for name in KV}
    cold = vm1.run(weights, {n: inputs[f"s1__{n}"] for n in ("token_id", "pos", "reshape_id0")})
    assert not torch.allclose(cold["logits"], torch.from_numpy(expected["s1__logits"]), atol=TOL)
    vm1.reset()
    warm = vm1.run(weights, {n: inputs[f"s1__{n}"] for n in ("token_id", "pos", "reshape_id0")}, kv)
    torch.testing.assert_close(warm["logits"], torch.from_numpy(expected["s1__logits"]), atol=TOL, rtol=TOL)
