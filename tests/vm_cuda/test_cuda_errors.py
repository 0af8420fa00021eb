"""The GPU runtime's error contract (spec §8.7), checked without a GPU: a failing PyCUDA call
surfaces as :class:`CudaUnavailable` (an amkspec error, exit 2 in the CLI), never as PyCUDA's own
exception, and a closed runtime refuses to launch."""

from __future__ import annotations

import pytest

from amkspec.ir import AmkspecError
from vm_cuda.cuda import CudaRuntime, CudaUnavailable, _pycuda_errors


class _FakeDriverError(Exception):
    """Stands in for ``pycuda.driver.Error``."""


class _FakeDriver:
    Error = _FakeDriverError


def test_a_pycuda_error_becomes_cuda_unavailable_naming_the_step() -> None:
    step = "the launch of 4 blocks"
    with pytest.raises(CudaUnavailable, match=f"{step} failed: out of memory") as info, _pycuda_errors(
        _FakeDriver, step
    ):
        raise _FakeDriverError("out of memory")
    assert isinstance(info.value, AmkspecError)
    assert isinstance(info.value.__cause__, _FakeDriverError)


def test_other_exceptions_pass_through_unchanged() -> None:
    with pytest.raises(KeyError), _pycuda_errors(_FakeDriver, "anything"):
        raise KeyError("not a driver error")


def test_a_closed_runtime_refuses_to_launch_and_closes_twice_quietly() -> None:
    runtime = CudaRuntime.__new__(CudaRuntime)  # no GPU here: a runtime whose context is gone
    runtime.context = None
    runtime.close()
    runtime.close()
    with pytest.raises(CudaUnavailable, match="closed"):
        runtime.launch(None)  # type: ignore[arg-type]
