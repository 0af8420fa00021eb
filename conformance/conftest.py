"""pytest wiring of the conformance runner: the ``implementation`` fixture (see ``runner.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner import AmkspecImplementation, Implementation


@pytest.fixture(scope="session")
def implementation() -> Implementation:
    return AmkspecImplementation()
