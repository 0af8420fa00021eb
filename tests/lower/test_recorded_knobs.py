"""A knob marked *recorded* (``Knob.consumed`` false) is checked and written into ``program.config``
but changes neither the lowered program nor the cost model's latency (the search guide's knob table)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amkspec.ir import MegakernelProgram, dumps
from amkspec.lower import lower
from amkspec.lower.cost import predicted_latency_us
from amkspec.lower.knobs import KNOB_BY_PATH

TARGET = "h100"


def _without_config(prog: MegakernelProgram) -> dict[str, Any]:
    doc = json.loads(dumps(prog))
    doc.pop("config")
    return doc


def _config(path: str, value: Any) -> dict[str, Any]:
    *parents, leaf = path.split(".")
    doc: dict[str, Any] = {}
    node = doc
    for name in parents:
        node = node.setdefault(name, {})
    node[leaf] = value
    return doc


@pytest.mark.parametrize("path", ["smem_bytes_per_block", "tiling.attention.kv_block"])
def test_a_knob_nothing_reads_is_marked_recorded(path: str) -> None:
    knob = KNOB_BY_PATH[path]
    programs = [lower("toy-2L", TARGET, _config(path, v)) for v in knob.search_choices(None)]
    recorded = {json.dumps(json.loads(dumps(p))["config"], sort_keys=True) for p in programs}
    assert len(programs) > 1 and len(recorded) == len(programs)  # each value is in program.config
    assert all(_without_config(p) == _without_config(programs[0]) for p in programs)
    assert len({predicted_latency_us(p, p.target) for p in programs}) == 1
    assert knob.consumed is False and knob.describe(None)["consumed"] is False
