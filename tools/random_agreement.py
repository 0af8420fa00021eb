"""validate() against the explicit-state model checker on random programs with every opcode
(issue 9, "0 disagreements on ≥ 10k random programs").

Run: ``python3 tools/random_agreement.py [--programs 10000] [--max-tasks 12] [--seed 0]``.
Programs come from :func:`amkspec.programs.strategies.valid_programs` (all 20 opcodes, realistic tiles
and KV), half of them with one synchronisation mutation (a wait dropped or made partial, a
counter shared, a tile moved onto its neighbour, a GEMM tile given another ``m_off``, a counter
``init`` set, a KV append moved). Agreement is
:func:`amkspec.evidence.exhaustive.agreement.compare` (validate accepts ⇔ no bad execution, up
to the listed rule-only codes; every model-checker finding explained by a code, R301 by the
partial waits that cause it; D204/D205 on cycles that partial waits let run are rule-only). The
run is reproducible: ``--seed`` seeds both hypothesis and the mutations. Prints the counts, the
opcodes seen, every disagreement (with the program's JSON) and the time; exits 1 on a
disagreement. A program with more reachable states than the model checker may visit
(:class:`~amkspec.evidence.model_check.StateLimit`) is counted as such and not compared.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from amkspec.evidence.exhaustive.agreement import compare
from amkspec.evidence.model_check import StateLimit
from amkspec.ir import InstructionKind, MegakernelProgram, Wait, dumps
from amkspec.programs.strategies import valid_programs
from amkspec.proofs import validate

K = InstructionKind


def mutate(prog: MegakernelProgram, rng: random.Random) -> str:
    """Apply one synchronisation mutation in place; its name."""
    tasks = prog.tasks
    waiting = [t for t in tasks if t.waits]
    tiles = [t for t in tasks if t.op in (K.GEMV_TILE, K.GEMM_TILE)]
    kv = [t for t in tasks if t.op is K.KV_APPEND]
    choices = ["share-counter", "init"]
    if waiting:
        choices += ["drop-wait", "partial-wait"]
    if len(tiles) > 1:
        choices += ["move-tile"]
    if any(t.op is K.GEMM_TILE for t in tiles):
        choices += ["gemm-m_off"]
    if kv:
        choices += ["kv-pos"]
    how = rng.choice(choices)
    if how == "drop-wait":
        t = rng.choice(waiting)
        t.waits.pop(rng.randrange(len(t.waits)))
    elif how == "partial-wait":
        t = rng.choice(waiting)
        i = rng.randrange(len(t.waits))
        t.waits[i] = Wait(t.waits[i].counter, max(1, t.waits[i].threshold - 1))
    elif how == "share-counter" and len(tasks) > 1:
        a, b = rng.sample(tasks, 2)
        b.out_counter = a.out_counter
    elif how == "init":
        rng.choice(prog.counters).init = 1
    elif how == "move-tile":
        t = rng.choice(tiles)
        t.params = {**t.params, "n_off": max(0, t.params.get("n_off", 0) - t.params.get("N_tile", 1))}
    elif how == "gemm-m_off":
        t = rng.choice([t for t in tiles if t.op is K.GEMM_TILE])
        t.params = {**t.params, "m_off": t.params.get("m_off", 0) + 1}
    elif how == "kv-pos":
        t = rng.choice(kv)
        t.params = {**t.params, "pos": max(0, t.params.get("pos", 0) - 1)}
    return how


def run(n: int, max_tasks: int, rng_seed: int) -> dict[str, Any]:
    rng = random.Random(rng_seed)
    tally: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    bad: list[tuple[str, str]] = []

    @seed(rng_seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(valid_programs(max_tasks=max_tasks), st.booleans())
    def one(prog: MegakernelProgram, mutated: bool) -> None:
        how = mutate(prog, rng) if mutated else "none"
        tally["programs"] += 1
        tally[f"mutation {how}"] += 1
        tally["accepted" if validate(prog).ok else "rejected"] += 1
        ops.update(t.op.name for t in prog.tasks)
        try:
            why = compare(prog)
        except StateLimit:  # the explicit-state checker cannot judge it: counted, not compared
            tally["beyond the model checker's state limit"] += 1
            return
        if why is not None:
            bad.append((why, dumps(prog)))

    one()
    return {"tally": tally, "ops": ops, "disagreements": bad}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=10_000)
    ap.add_argument("--max-tasks", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.perf_counter()
    out = run(args.programs, args.max_tasks, args.seed)
    for why, doc in out["disagreements"][:5]:
        print(f"DISAGREEMENT: {why}\n{doc}")
    print(dict(out["tally"]))
    print(f"opcodes seen: {len(out['ops'])}/20 {dict(out['ops'])}")
    print(f"disagreements: {len(out['disagreements'])}; time: {time.perf_counter() - start:.1f} s")
    sys.exit(1 if out["disagreements"] else 0)


if __name__ == "__main__":
    main()
