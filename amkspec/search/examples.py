"""Plug-in examples for :mod:`amkspec.search`: a lowering with a deliberate bug, and a wrong VM.

Both exist to show (in the docs and the tests) what the search does with a lowering or a VM it
cannot trust: the validator rejects the racy programs with replayed witnesses, and the wrong VM
never gets a latency.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amkspec.ir import GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.models.config import ModelConfig
from amkspec.search.evaluate import default_lowering

RACY_DEPTH = 3
"""From this pipelining depth on, :func:`racy_prefetch_lowering` drops a wait."""


def racy_prefetch_lowering(model: ModelConfig, target: GpuTarget, config: ScheduleConfig, pos: int
                           ) -> MegakernelProgram:
    """amkspec's lowering, except that at ``pipelining_depth >= 3`` each layer's SwiGLU stops waiting
    for its up projection: the kind of bug an aggressive prefetch introduces (spec §3.3 race)."""
    prog = default_lowering(model, target, config, pos)
    if config.pipelining_depth >= RACY_DEPTH:
        for task in prog.tasks:
            if task.label.endswith(".swiglu"):
                task.waits = task.waits[:1]
    return prog


class PerturbedVM:
    """The ReferenceVM with ``delta`` added to every logit: a VM that is wrong on every config."""

    name = "perturbed-reference"

    def __init__(self, delta: float = 1e-2) -> None:
        self.delta = delta

    def __call__(self, prog: MegakernelProgram, weights: Mapping[str, Any], inputs: Mapping[str, Any]
                 ) -> Mapping[str, Any]:
        from amkspec.vm import ReferenceVM

        out = dict(ReferenceVM(prog).run(weights, inputs))
        out["logits"] = out["logits"] + self.delta
        return out
