"""Generate the refuse cases (kind ``refuse``, spec §2.4) under ``corpus/cases/refuse/``.

A VM must refuse, not run, a program its validator rejects (rule EXEC-REFUSE-1) and must run one
it accepts (rule EXEC-REFUSE-2). The programs are validate cases' triggers and near misses (one per
obligation family, and a program whose task lacks a param the original's reference needs), with
weights and inputs so that a VM that skips validation could run them. Each case cites both
EXEC rules and the rules of its source case: the judge asks the implementation's own verdict when
it declares ``validate``, and otherwise holds a run of an invalid program against the source's rules.

Run ``python3 -m corpus.make_refuse_cases`` from the repository root; a test checks that the
committed files equal this script's output.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from amkspec.conformance.rules import VOCABULARY
from amkspec.conformance.tensors import encode
from amkspec.ir import BufferKind, MegakernelProgram, from_dict
from corpus.casefiles import write_cases
from corpus.make_cases import CASES_DIR
from corpus.make_run_cases import sample

OUT_DIR = CASES_DIR / "refuse"

SOURCES = [
    ("races/R303_unordered_read", "a read race: the residual does not wait for the projection tiles"),
    ("races/R306_overlapping_tiles", "a write race: two GEMV tiles write the same columns"),
    ("deadlock/D202_threshold_above_producers", "a wait that can never be met"),
    ("memory/M401_tile_past_output", "a GEMV tile that would write past its output"),
    ("structure/S104_dangling_input", "a task that reads a buffer that does not exist"),
    ("memory/M436_combine_head_dim", "an ATTENTION_COMBINE without head_dim"),
]
"""Validate cases whose trigger must be refused and whose near miss must run."""


def _arrays(prog: MegakernelProgram, kinds: tuple[BufferKind, ...]) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    return {
        (b.source or b.name): encode(sample(b.name, b.dtype, b.shape, rng), b.dtype.name)
        for b in prog.buffers
        if b.kind in kinds
    }


def _case(source: str, description: str, outcome: str) -> dict[str, Any]:
    source_case = json.loads((CASES_DIR / f"{source}.json").read_text())
    program = source_case["program"]
    prog = from_dict(program)
    verdict_rules = [r for r in source_case["rules"] if r not in VOCABULARY]
    what = "must refuse" if outcome == "refused" else "must run (the valid near miss of"
    return {
        "kind": "refuse",
        "description": f"{description}: a VM {what}" + (")" if outcome == "ran" else ""),
        "rules": ["EXEC-REFUSE-1", "EXEC-REFUSE-2", *verdict_rules],
        "program": program,
        "weights": _arrays(prog, (BufferKind.WEIGHT, BufferKind.CONST)),
        "inputs": _arrays(prog, (BufferKind.IO_INPUT,)),
        "expect": {"outcome": outcome},
    }


def build_cases() -> dict[str, dict[str, Any]]:
    """File name → case document: each source's trigger (refused) and near miss (ran)."""
    docs: dict[str, dict[str, Any]] = {}
    for source, description in SOURCES:
        stem = source.split("/")[1]
        docs[f"{stem}.json"] = _case(source, description, "refused")
        docs[f"{stem}_ok.json"] = _case(f"{source}_ok", description, "ran")
    return docs


def main() -> int:
    n = write_cases(OUT_DIR, build_cases())
    print(f"wrote {n} refuse cases to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
