"""CI slice of ``tools/random_agreement.py``: validate() and the explicit-state model checker agree
on random programs with every opcode, half of them with one synchronisation mutation (spec §3)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amkspec.ir import MegakernelProgram
from amkspec.programs.strategies import valid_programs

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool() -> ModuleType:
    sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location("random_agreement", TOOLS / "random_agreement.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_programs(max_tasks=8), st.booleans(), st.integers(0, 2**16))
def test_validate_agrees_with_the_model_checker(prog: MegakernelProgram, mutated: bool, seed: int) -> None:
    if mutated:
        TOOL.mutate(prog, random.Random(seed))
    why = TOOL.compare(prog)
    assert why is None, why
