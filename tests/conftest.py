"""Shared test configuration: hypothesis profiles and paths to the bundled data."""

from __future__ import annotations

import os
from pathlib import Path

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
