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


REQUIRE_GPU = "AMK_REQUIRE_GPU"
"""Set to 1 on a GPU machine: a skipped ``gpu`` test is then a failure that gives the skip's reason."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under ``AMK_REQUIRE_GPU=1``, turn the skip of a ``gpu``-marked test into a failure."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get(REQUIRE_GPU) == "1" and report.skipped and item.get_closest_marker("gpu") is not None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_GPU}=1 but this GPU test was skipped: {reason}"
