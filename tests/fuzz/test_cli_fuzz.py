"""Fuzz every command with byte-level mutations of real files (issue 12; see harness.py).

A short run per (command, file kind) keeps CI fast; ``tools/fuzz_cli.py`` runs the same
harness for longer, one subprocess per case under memory and CPU limits.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tools.fuzz_harness import Target, check, make_side_files, mutate, targets

EXAMPLES_PER_TARGET = 40
"""Cases per target in CI (the long run is tools/fuzz_cli.py)."""

SECONDS_PER_CASE = 20.0
"""A case slower than this is a hang (the toy model runs in well under a second)."""


@pytest.fixture(scope="module")
def side_files() -> Iterator[dict[str, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        yield make_side_files(Path(tmp))


_SIDE_NAMES = ("program", "rejected", "cert", "trace", "toy", "weights", "inputs", "config", "weights_json")
_TARGETS = targets({k: Path(k) for k in _SIDE_NAMES})


@pytest.mark.parametrize("name", [t.name for t in _TARGETS])
def test_fuzzed_input_never_breaks_the_contract(name: str, side_files: dict[str, Path]) -> None:
    target: Target = next(t for t in targets(side_files) if t.name == name)
    original = target.seed.read_bytes()
    fixed = dict(side_files)

    @settings(max_examples=EXAMPLES_PER_TARGET, deadline=None, database=None,
              phases=(Phase.explicit, Phase.generate),  # no shrinking in CI: tools/fuzz_cli.py shrinks
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.data())
    def case(data: st.DataObject) -> None:
        payload = mutate(data, original)
        with tempfile.TemporaryDirectory() as work:
            t0 = time.perf_counter()
            check(target, payload, Path(work), fixed)
            assert time.perf_counter() - t0 < SECONDS_PER_CASE, f"{name}: a case took too long"

    case()


def test_the_unmutated_seeds_work(side_files: dict[str, Path]) -> None:
    """The harness is honest: on the real files every command succeeds (or gives its verdict)."""
    for target in targets(side_files):
        fixed = dict(side_files)
        with tempfile.TemporaryDirectory() as work:
            code, err = check(target, target.seed.read_bytes(), Path(work), fixed)
        assert code in (0, 1), f"{target.name}: {err}"
