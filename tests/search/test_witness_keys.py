"""Counterexample files: one per distinct rejection, lowering failures included (search guide)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amkspec.ir import GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.models.config import ModelConfig
from amkspec.search import evaluate, search
from amkspec.search.witnesses import MAX_KEY

LONG = {f"{'k' * 36}{n}": 1 for n in range(3)}
"""Three unknown knobs: a key longer than MAX_KEY, which is cut and hashed."""


@pytest.mark.parametrize("configs", [
    [{"a b": 1}, {"a/b": 1}, {"a_b": 1}, {"a:b": 1}, {"a\u00e9b": 1}, {"a_b~0": 1}],
    [{"x+y": 1}, {"x@y": 1}, {"x_y": 1}, {"x": 1, "y": 1}],
    [LONG, {**LONG, "k": 1}, {f"{'k' * 36}{n}": 1 for n in range(1, 4)}],
])
def test_distinct_knob_rejections_never_share_a_file(tmp_path: Path, configs: list[dict[str, int]]) -> None:
    verdicts = [evaluate("toy", "h100", c, witness_dir=tmp_path) for c in configs]
    files = [v.witness for v in verdicts]
    assert None not in files and len(set(files)) == len(configs)
    for v in verdicts:
        assert v.witness is not None
        doc = json.loads(Path(v.witness).read_text())
        assert doc["schedule_id"] == v.schedule_id and doc["codes"] == ["knob:unknown"]
        assert len(Path(v.witness).stem) <= MAX_KEY + 11


def test_a_plain_knob_path_keeps_its_readable_name(tmp_path: Path) -> None:
    v = evaluate("toy", "h100", {"tiling": {"gemv": {"N_tile": 0}}}, witness_dir=tmp_path)
    assert v.witness == str(tmp_path / "knob_range@tiling.gemv.N_tile.json")


class Refused(RuntimeError):
    """What the test lowering raises for a deep pipeline."""


def picky_lowering(model: ModelConfig, target: GpuTarget, config: ScheduleConfig, pos: int
                   ) -> MegakernelProgram:
    """Raises :class:`Refused` from pipelining depth 2 on, :class:`ValueError` for depth 0."""
    if config.pipelining_depth == 0:
        raise ValueError("depth 0 is not supported")
    if config.pipelining_depth >= 2:
        raise Refused(f"pipelining depth {config.pipelining_depth} is too deep")
    from amkspec.search.evaluate import default_lowering

    return default_lowering(model, target, config, pos)


def _lowering_verdict(tmp_path: Path, depth: int) -> Any:
    return evaluate("toy", "h100", {"pipelining_depth": depth}, lowering=picky_lowering, witness_dir=tmp_path)


def test_a_lowering_failure_leaves_its_counterexample(tmp_path: Path) -> None:
    deep, zero, fine = (_lowering_verdict(tmp_path, d) for d in (3, 0, 1))
    assert deep.failure == zero.failure == "lowering" and fine.correct and fine.witness is None
    assert deep.witness == str(tmp_path / "lowering@Refused.json")
    assert zero.witness == str(tmp_path / "lowering@ValueError.json")
    doc = json.loads(Path(deep.witness).read_text())
    assert doc["schedule_id"] == deep.schedule_id and doc["config"]["pipelining_depth"] == 3
    assert doc["stage"] == "lowering" and "Refused: pipelining depth 3 is too deep" in doc["error"]


def test_every_rejected_trial_of_a_search_names_its_counterexample(tmp_path: Path) -> None:
    result = search("toy", "h100", 12, tmp_path, seed=1, lowering=picky_lowering)
    rejected = [t for t in result.trials if t.status == "rejected"]
    assert any(t.verdict.failure == "lowering" for t in rejected)
    for t in rejected:
        assert t.verdict.witness is not None and Path(t.verdict.witness).exists()
        assert json.loads(Path(t.verdict.witness).read_text())["stage"] in (
            "lowering", "knob checks (before lowering)", "validate() of the lowered program")
