"""Shared test configuration: hypothesis profiles and paths to the bundled data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Tiny tensors: intra-op threads only add contention on a 2-core machine (set before torch loads).
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures" / "amk"
"""Programs, weights and outputs written by the original AMK implementation."""

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """One local Ray instance with 2 CPUs for every Ray test of the session (its start-up costs
    seconds), shut down at the end so that no Ray process outlives the suite. Executors made while
    it runs use it; a subprocess joins it with ``--address``."""
    import logging

    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
