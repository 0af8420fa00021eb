"""A CI slice of ``tools/fuzz_evaluate.py`` (the full 10k run is quoted in docs/guides/search.md)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import ROOT


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_evaluate", ROOT / "tools" / "fuzz_evaluate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_evaluate_survives_a_fuzz_slice() -> None:
    stats, failures, _ = _tool().fuzz(200, seed=20261123)
    assert failures == []
    assert stats["valid+correct"] > 0 and stats["rejected"] > 0
    assert stats["cli exit 2"] > 0 and stats["cli exit 0"] + stats["cli exit 1"] > 0
    assert {"code knob:type", "code knob:range", "code O504"} <= set(stats)
