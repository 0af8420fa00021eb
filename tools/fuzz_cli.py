"""The long run of the CLI fuzz harness (issue 12; tools/fuzz_harness.py).

Run: ``python3 tools/fuzz_cli.py [--examples N] [--isolated] [--only NAME]``.

Without ``--isolated`` every case runs in process (fast: thousands of cases a minute); with it,
each case is a fresh ``python -m amkspec`` under ``RLIMIT_AS`` (memory) and ``RLIMIT_CPU``
limits, so a case that would exhaust memory or spin is caught too. Failures are shrunk by
hypothesis and printed; the exit code is the number of failing targets.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.fuzz_harness import Runner, Target, check, make_side_files, mutate, run_in_process, targets

MEMORY_BYTES = 4 << 30
"""Address-space limit of an isolated case (torch alone maps about 1 GiB)."""

CPU_SECONDS = 120
"""CPU-time limit of an isolated case."""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def run_isolated(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``python -m amkspec ARGS`` in a child process under memory and CPU limits."""
    proc = subprocess.run(
        [sys.executable, "-m", "amkspec", *args], capture_output=True, env={**os.environ, **env},
        cwd=Path(__file__).resolve().parent.parent, preexec_fn=_limits, timeout=4 * CPU_SECONDS,
    )
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def fuzz(target: Target, side: dict[str, Path], examples: int, runner: Runner) -> str | None:
    """The failure message of ``target`` after ``examples`` cases, or None."""
    original = target.seed.read_bytes()

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def case(data: st.DataObject) -> None:
        payload = mutate(data, original)
        with tempfile.TemporaryDirectory() as work:
            check(target, payload, Path(work), side, runner)

    try:
        case()
    except AssertionError as exc:
        return str(exc)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=500, help="cases per target")
    parser.add_argument("--isolated", action="store_true", help="one limited subprocess per case")
    parser.add_argument("--only", default=None, help="only targets whose name contains this")
    opts = parser.parse_args()
    runner: Runner = run_isolated if opts.isolated else run_in_process
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        side = make_side_files(Path(tmp))
        for target in targets(side):
            if opts.only and opts.only not in target.name:
                continue
            t0 = time.perf_counter()
            problem = fuzz(target, side, opts.examples, runner)
            status = "ok" if problem is None else "FAILED"
            took = time.perf_counter() - t0
            print(f"{target.name:<40} {opts.examples} cases {took:7.1f} s  {status}", flush=True)
            if problem is not None:
                failures += 1
                print("  " + problem.replace("\n", "\n  "), flush=True)
    raise SystemExit(failures)


if __name__ == "__main__":
    main()
