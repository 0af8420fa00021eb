"""Fuzz ``amkspec evaluate`` with arbitrary ScheduleConfig documents: no input may crash it or get a
dishonest verdict.

Each input is a mutation of the default config (1-3 knobs set to choices, edge values, wrong types,
huge or non-finite numbers, odd strings, junk trees), a random JSON tree, or a byte-level mutation of
a config file's text run through the CLI. Checks: evaluate returns (never raises), the verdict obeys
every honesty rule and is strict JSON, and no input reaches evaluate's last-resort "internal
error" boundary; the CLI exits 0/1/2 with JSON on stdout (0/1) or one line on
stderr (2).

    python3 tools/fuzz_evaluate.py --n 10000 --seed 0        # the full run quoted in the docs
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from amkspec.lower import knobs
from amkspec.search import Evaluator, honesty_violations
from amkspec.search.space import default_document, put

ODD = ["", "deep", "64", "\ud800", "é" * 40, "round_robin", "graph_color", "gate", "NaN"]
NUMBERS = [0, -1, 1, 15, 16, 31, 32, 33, 48, 64, 1023, 1024, 1025, 1056, 2**31 - 1, 2**31, 2**63, -(2**63),
           10**30, 10**400, 0.5, 64.0, -0.0, 1e308, float("nan"), float("inf"), True, False, None]


def junk(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON-like value."""
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(NUMBERS + ODD)
    if roll < 0.7:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice([*ODD, "gemv", "N_tile", "attention", "tiling"]): junk(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def value_for(rng: random.Random, knob: knobs.Knob) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(knob.search_choices(None))
    if roll < 0.65 and knob.edge_values(None):
        return rng.choice(knob.edge_values(None))
    if roll < 0.9:
        return rng.choice(NUMBERS + ODD)
    return junk(rng)


def mutated(rng: random.Random) -> Any:
    doc = default_document()
    for _ in range(rng.randint(1, 3)):
        knob = rng.choice(knobs.KNOBS)
        doc = put(doc, knob.path, value_for(rng, knob))
    roll = rng.random()
    if roll < 0.1:
        doc[rng.choice(ODD)] = junk(rng)
    elif roll < 0.2:
        doc[rng.choice(["tiling", "sm_assignment", "fusion_grouping"])] = junk(rng)
    return doc


def mutated_text(rng: random.Random) -> bytes:
    """A config file's bytes with a few bytes flipped, inserted or deleted."""
    data = bytearray(json.dumps(mutated(rng) if rng.random() < 0.5 else default_document()).encode())
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data) + 1)
        op = rng.random()
        if op < 0.4 and i < len(data):
            data[i] = rng.randrange(256)
        elif op < 0.7:
            data[i:i] = bytes([rng.choice(b'{}[]":,0123456789-eE.tfn \\')])
        elif i < len(data):
            del data[i]
    return bytes(data)


def check_verdict(ev: Evaluator, doc: Any, stats: Counter[str], failures: list[str]) -> None:
    try:
        v = ev.evaluate(doc)
        json.dumps(v.to_dict(), allow_nan=False)
    except Exception as exc:  # noqa: BLE001 - a crash is what this tool looks for
        failures.append(f"evaluate raised {type(exc).__name__} on {knobs.show(doc, 200)}")
        return
    problems = honesty_violations(v)
    if problems:
        failures.append(f"dishonest verdict {problems} on {knobs.show(doc, 200)}")
    if v.failure == "error":  # caught by evaluate's boundary, but still a bug
        failures.append(f"internal error {v.rejected_reason} on {knobs.show(doc, 200)}")
    stats["valid+correct" if v.correct else (v.failure or "?")] += 1
    for code in v.rejected_codes:
        stats[f"code {code}"] += 1


def check_cli(data: bytes, workdir: Path, stats: Counter[str], failures: list[str]) -> None:
    from click.testing import CliRunner

    from amkspec.cli import main

    cfg = workdir / "cfg.json"
    cfg.write_bytes(data)
    r = CliRunner().invoke(main, ["evaluate", "toy", "--target", "h100", "--config", str(cfg)])
    stats[f"cli exit {r.exit_code}"] += 1
    if r.exit_code in (0, 1):
        try:
            json.loads(r.stdout)
        except ValueError:
            failures.append(f"cli exit {r.exit_code} without a JSON verdict on {data!r}")
    elif r.exit_code != 2 or len(r.stderr.strip().splitlines()) != 1 or (
            r.exception is not None and not isinstance(r.exception, SystemExit)):
        failures.append(f"cli exit {r.exit_code} ({type(r.exception).__name__}) on {data!r}: {r.stderr!r}")


def fuzz(n: int, seed: int = 0, model: str = "toy", target: str = "h100", cli_share: float = 0.1
         ) -> tuple[Counter[str], list[str], float]:
    """Run ``n`` inputs; returns (verdict statistics, failures, seconds)."""
    rng = random.Random(seed)
    ev = Evaluator(model, target)
    stats: Counter[str] = Counter()
    failures: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(n):
            roll = rng.random()
            if roll < cli_share:
                check_cli(mutated_text(rng), Path(tmp), stats, failures)
            elif roll < cli_share + 0.15:
                check_verdict(ev, junk(rng), stats, failures)
            else:
                check_verdict(ev, mutated(rng), stats, failures)
    return stats, failures, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="toy")
    parser.add_argument("--target", default="h100")
    args = parser.parse_args(argv)
    stats, failures, seconds = fuzz(args.n, args.seed, args.model, args.target)
    print(f"fuzzed evaluate with {args.n} inputs (seed {args.seed}, {args.model} on {args.target}) "
          f"in {seconds:.1f} s: {len(failures)} failures")
    for key, count in sorted(stats.items()):
        print(f"  {key:<24} {count}")
    for failure in failures[:20]:
        print(f"FAILURE {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
