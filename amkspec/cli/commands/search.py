"""``amkspec evaluate``, ``search`` and ``propose``: the Loop-2 schedule commands (spec §5).

``evaluate`` prints only the JSON verdict on stdout (exit 0 valid and correct, 1 otherwise, 2
unusable input); ``search`` prints a one-line summary on stdout (``--json``: the whole summary)
and its progress on stderr (a bar on a terminal, one line per trial otherwise); ``propose`` prints
the knob space with the target's caps filled in.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from amkspec.cli.base import clean_errors, echo_json, main
from amkspec.cli.files import read_config_document
from amkspec.cli.options import (
    SEED,
    SHARE,
    TARGET_NAMES,
    VM_CHOICE,
    VM_TIMEOUT,
    executor_options,
    load_lowering,
    lowering_option,
    model_argument,
    model_label,
)
from amkspec.cli.progress import TrialProgress
from amkspec.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED
from amkspec.ir import TARGETS

ROUND_HELP = "4"
"""``--round``'s default as ``--help`` shows it: :data:`amkspec.search.loop.ROUND_SIZE` (which imports
torch, so the CLI does not read it at start-up; a test keeps the two equal)."""


@main.command("evaluate")
@model_argument(runnable=True)
@click.option("--target", required=True, type=TARGET_NAMES, help="GPU target record.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="ScheduleConfig JSON, or "
              "the output of 'amkspec propose' (default: the default config).")
@click.option("--vm", type=VM_CHOICE, default="reference", show_default=True, help="Where the step runs.")
@click.option("--timeout", "timeout_s", type=VM_TIMEOUT, default=10.0, show_default=True,
              help="Watchdog of the megakernel VMs, in seconds.")
@click.option("--witness-dir", type=click.Path(file_okay=False),
              help="Write a rejection's counterexample here.")
@lowering_option
@clean_errors
def evaluate_cmd(model: str | Path, target: str, config_path: str | None, vm: str, timeout_s: float,
                 witness_dir: str | None, lowering_spec: str | None) -> None:
    """Lower, validate, run and time one ScheduleConfig; print the JSON verdict.

    Exit 0 when the config is valid and its output matches the eager model, 1 otherwise.
    """
    from amkspec.search import evaluate

    config = read_config_document(config_path) if config_path else None
    verdict = evaluate(model, target, config, vm=vm, timeout_s=timeout_s, witness_dir=witness_dir,
                       lowering=load_lowering(lowering_spec))
    echo_json(verdict.to_dict())
    sys.exit(EXIT_OK if verdict.valid and verdict.correct else EXIT_REJECTED)


@main.command("propose")
@model_argument(dequantize=False)
@click.option("--target", required=True, type=TARGET_NAMES, help="GPU target record.")
@clean_errors
def propose_cmd(model: str | Path, target: str) -> None:
    """Print the edit surface: the default config, its id and every knob with the target's caps."""
    from amkspec.lower import knobs

    tgt = TARGETS[target]
    echo_json({
        "model": model_label(model), "target": target,
        "caps": {"num_sms": tgt.num_sms, "smem_bytes_per_block_optin": tgt.smem_bytes_per_block_optin,
                 "smem_bytes_per_sm": tgt.smem_bytes_per_sm, "threads_per_block": [knobs.WARP,
                                                                                  knobs.MAX_THREADS_PER_BLOCK]},
        "schedule_config": knobs.config_dict(knobs.default_config()),
        "schedule_id": knobs.schedule_id(knobs.default_config()),
        "search_space": knobs.search_space(tgt),
    })


def summary_line(result: Any, model: str, target: str) -> str:
    """The one-line summary ``search`` prints on stdout (``--json``: the whole document)."""
    doc = result.summary()
    counts = ", ".join(f"{n} {status}" for status, n in doc["statuses"].items())
    head = f"search {model} on {target}: {doc['trials']} trials ({counts})"
    best = result.incumbent
    if best is None:
        found = "no correct config with a latency"
    else:
        v = best.verdict
        gain = doc["improvement_pct"]
        found = (f"incumbent trial {best.trial} {v.schedule_id}, {v.latency_us} us {v.latency_kind}"
                 + ("" if best.trial == 0 or gain is None else f", {gain}% faster than the default"))
    return f"{head}; {found}; {doc['cache_hits']} cache hits; results in {result.out_dir / 'results.tsv'}"


@main.command("search")
@model_argument(runnable=True, dequantize=False)
@click.option("--target", required=True, type=TARGET_NAMES, help="GPU target record.")
@click.option("--budget", required=True, type=click.IntRange(1, 100_000),
              help="Trials in all (with --resume: the new total).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seeds the proposals (uint64).")
@click.option("--explore", type=SHARE, default=0.35, show_default=True,
              help="Share of trials that draw a fresh random config.")
@click.option("--probe", type=SHARE, default=0.25, show_default=True,
              help="Share of explore trials that probe the edge of a knob's feasible range.")
@click.option("--beam", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Exploit parents: the K best correct configs (1: the incumbent).")
@click.option("--round", "round_size", type=click.IntRange(1, 4096), default=None, show_default=ROUND_HELP,
              help="Trials proposed together from the rounds before (judged in parallel); part of the "
                   "search's identity, unlike --executor and --workers.")
@click.option("--vm", type=VM_CHOICE, default="reference", show_default=True)
@click.option("--timeout", "timeout_s", type=VM_TIMEOUT, default=10.0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Run directory (default: search-MODEL-TARGET).")
@click.option("--resume", is_flag=True, help="Continue the run saved in --out (which must hold one).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Draw the trials into this PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole summary as JSON (default: one line).")
@click.option("--quiet", is_flag=True, help="No progress output.")
@executor_options
@lowering_option
@clean_errors
def search_cmd(model: str | Path, target: str, budget: int, seed: int, explore: float, probe: float,
               beam: int, round_size: int | None, vm: str, timeout_s: float, out_dir: str | None,
               resume: bool, plot_path: str | None, as_json: bool, quiet: bool, executor: str,
               workers: int | None, address: str | None, lowering_spec: str | None) -> None:
    """Search ScheduleConfigs: correctness first, then a strict 1% latency win (keep/revert).

    Writes results.tsv, state.json, cache.json and witnesses/ into --out. Each round's candidates
    are judged on --executor; the trials do not depend on it. Exit 0 when a correct incumbent
    exists, 1 when none was found, 130 when interrupted (resume with --resume).
    """
    from amkspec.executors import make_executor
    from amkspec.search import Search, SearchOptions

    label = model_label(model)
    out = Path(out_dir or f"search-{label}-{target}")
    rounds = {} if round_size is None else {"round_size": round_size}
    options = SearchOptions(str(model), target, budget, seed, explore, beam, probe, vm, **rounds)
    run = Search(options, out, resume=resume, timeout_s=timeout_s, lowering=load_lowering(lowering_spec))
    progress = TrialProgress(budget, len(run.trials), quiet)
    try:
        with make_executor(executor, workers, address, gpus_per_job=1 if vm == "cuda" else 0) as pool:
            result = run.run(progress, pool)
    finally:
        progress.close()
    if plot_path:
        from amkspec.search.plot import plot_trials

        plot_trials(result.trials, plot_path, f"amkspec search {label} --target {target} (seed {seed})")
    if as_json:
        echo_json(result.summary())
    else:
        click.echo(summary_line(result, label, target))
    if result.interrupted:
        click.echo(f"amkspec: interrupted after {len(result.trials)} trials; continue with --resume "
                   f"--out {out}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_OK if result.incumbent is not None else EXIT_REJECTED)
