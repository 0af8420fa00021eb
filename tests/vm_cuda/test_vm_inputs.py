"""What the megakernel VM accepts, and what it keeps after a failed launch, as the ReferenceVM does
(spec §2.4, §8.5): binding errors, the caches after a fault, and the watchdog's ``timeout_s``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from amkspec.programs.small import add_weight, embed_append, scale_chain
from amkspec.vm import BindingError, ExecutionError, ReferenceVM
from vm_cuda import MegakernelVM
from vm_cuda.pack import WATCHDOG_MAX_S, watchdog_ns

X = {"x": np.ones((1, 4), np.float32)}


def test_a_sparse_weight_is_a_binding_error_on_both_vms(cxx: str) -> None:
    weights = {"w": torch.full((1, 4), 2.0).to_sparse()}
    for vm in (ReferenceVM(add_weight()), MegakernelVM(add_weight(), "cpu")):
        with pytest.raises(BindingError, match="weight 'w': a sparse_coo tensor"):
            vm.run(weights, X)


def test_after_a_fault_both_vms_forget_the_caches_they_carried(cxx: str) -> None:
    table = {"tab": torch.arange(10.0).reshape(5, 2)}
    after = []
    for vm in (ReferenceVM(embed_append()), MegakernelVM(embed_append(), "cpu")):
        vm.run(table, {"ids": [3]}, kv={"kc": torch.full((4, 1, 2), 7.0)})
        with pytest.raises(ExecutionError):
            vm.run(table, {"ids": [9]})  # outside the table: the launch fails once started
        after.append(vm.run(table, {"ids": [2]})["kc"])
    assert torch.equal(after[0], after[1])
    assert after[0].flatten().tolist() == [0.0, 0.0, 4.0, 5.0, 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("timeout_s", [0, 0.0, -1.0, float("inf"), float("nan"), 1e30, "5", True, None])
def test_a_megakernel_vm_takes_only_a_watchdog_it_can_run(timeout_s: Any) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        MegakernelVM(scale_chain(), "cpu", timeout_s=timeout_s)


def test_the_header_holds_the_watchdog_in_whole_nanoseconds() -> None:
    assert watchdog_ns(0) == 0  # the header's "never", for tools that pack images themselves
    assert watchdog_ns(1e-12) == 1
    assert watchdog_ns(0.5) == 500_000_000
    assert watchdog_ns(np.float64(2.0)) == 2_000_000_000
    assert watchdog_ns(WATCHDOG_MAX_S * 0.999) < 2**63
    with pytest.raises(ValueError):
        watchdog_ns(WATCHDOG_MAX_S)
