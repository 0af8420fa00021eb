"""Shared setup of the megakernel tests: the CPU build needs a host C++ compiler (CI has g++)."""

from __future__ import annotations

import pytest

from vm_cuda.build import BuildError, compiler


@pytest.fixture(scope="session")
def cxx() -> str:
    """The host compiler; its absence is an error, not a skip: CI must build the CPU kernel."""
    try:
        return compiler()
    except BuildError as exc:
        pytest.fail(str(exc))
