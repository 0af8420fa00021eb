"""A VM that holds chosen programs until the test releases them, and a search driver around it: how
the parallel-search tests kill or interrupt a worker in the middle of a candidate.

``python -m tests.search.gated OUT GATE BUDGET SEED EXECUTOR [ADDRESS] [SHA...]`` runs
``search("toy", "h100", BUDGET, OUT, seed=SEED)`` with ``Gate(GATE, SHA...)`` on the executor,
prints the number of trials, and exits 130 when interrupted.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amkspec.ir import MegakernelProgram
from amkspec.ir.jsonio import program_sha256


class Gate:
    """The ReferenceVM, except that a program whose hash is in ``hold`` writes
    ``<directory>/<hash>.<pid>.held`` and waits for ``<directory>/<hash>.go`` before it runs."""

    name = "reference"
    """What its verdicts name as their VM (the cache context still tells it apart)."""

    def __init__(self, directory: str, hold: tuple[str, ...]) -> None:
        self.directory = directory
        self.hold = hold

    def __call__(self, prog: MegakernelProgram, weights: Mapping[str, Any], inputs: Mapping[str, Any]
                 ) -> Mapping[str, Any]:
        from amkspec.vm import ReferenceVM

        sha = program_sha256(prog)
        if sha in self.hold:
            gate = Path(self.directory)
            (gate / f"{sha}.{os.getpid()}.held").touch()
            deadline = time.monotonic() + 300
            while not (gate / f"{sha}.go").exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{sha} was never released")
                time.sleep(0.05)
        return ReferenceVM(prog).run(weights, inputs)


def main(argv: list[str]) -> int:
    from amkspec.executors import make_executor
    from amkspec.search import search
    from tests.search.gated import Gate  # by its module's name, not __main__'s: a resume names it so

    out, gate, budget, seed, executor, *rest = argv
    address = rest.pop(0) if executor == "ray" else None
    with make_executor(executor, 2, address) as pool:
        result = search("toy", "h100", int(budget), out, seed=int(seed), runner=Gate(gate, tuple(rest)),
                        executor=pool)
    print(len(result.trials), flush=True)
    return 130 if result.interrupted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
