"""``amkspec weights`` and ``decode``: a model's weights, and greedy decoding on a VM beside the eager
model (the lowering guide)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np

from amkspec.cli.base import clean_errors, echo_json, fail, main
from amkspec.cli.files import output_file, read_config, save_npz, to_numpy
from amkspec.cli.options import (
    DEFAULT_PROMPT,
    DTYPES,
    SEED,
    bound_weights,
    make_vm,
    model_argument,
    parse_prompt_ids,
    policy_of,
    quant_options,
    quant_spec,
    read_model_weights,
    vm_option,
)
from amkspec.cli.progress import Bar
from amkspec.exit_codes import EXIT_REJECTED
from amkspec.ir import TARGETS, DType

if TYPE_CHECKING:
    from amkspec.lower.decode import DecodeStep


@main.command("weights")
@model_argument()
@click.option("--dtype", type=DTYPES, default=None, help="Default: the model's dtype.")
@click.option("--seed", type=SEED, default=None, help="Default: the model's seed (0).")
@quant_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help=".npz or .safetensors")
@clean_errors
def weights_cmd(model: str | Path, dtype: str | None, seed: int | None, quant: str | None, group: int,
                output: str) -> None:
    """Write MODEL's weights (a preset's deterministic ones, a checkpoint's imported ones), keyed by
    state-dict key (= buffer source).

    With ``--quant`` the projections are written as their stored levels plus ``<key>.scales``,
    ready for a program lowered with the same ``--quant``/``--group``.
    """
    from amkspec.lower import resolve_model
    from amkspec.models import make_weights, quantize_weights
    from amkspec.models.registry import model_weights

    m = resolve_model(model)
    if m.checkpoint is not None and seed is not None:
        fail(f"--seed: model {m.name!r} has its checkpoint's weights, not seeded ones")
    weights = (bound_weights(model_weights(m, DType[dtype] if dtype else None)) if m.checkpoint is not None
               else make_weights(m, DType[dtype] if dtype else None, seed))
    spec = quant_spec(quant, group)
    if spec is not None:
        weights = quantize_weights(m, weights, spec)[0]
    if output.endswith(".safetensors"):
        import torch
        from safetensors import SafetensorError
        from safetensors.torch import save_file

        with output_file(output) as tmp:
            try:
                save_file({k: torch.as_tensor(v) for k, v in weights.items()}, tmp)
            except SafetensorError as exc:
                fail(f"{output}: cannot write: {exc}")
    elif output.endswith(".npz"):
        save_npz(output, {k: to_numpy(v) for k, v in weights.items()})
    else:
        fail(f"{output}: use a .npz or .safetensors file name")
    click.echo(f"{output}: {len(weights)} tensors, {sum(int(np.prod(v.shape)) for v in weights.values())} "
               "values")


def _step_line(step: DecodeStep) -> str:
    check = step.check
    err = f"max abs err {check.max_abs_err:.3g}" if check is not None else "no eager check"
    verdict = "" if check is None else (" ok" if check.passed else " DISAGREE")
    eager = list(step.eager_next or [])
    return f"pos {step.pos:3d} fed {list(step.fed)} vm→{list(step.vm_next)} eager→{eager} {err}{verdict}"


@main.command("decode")
@model_argument()
@click.option("--prompt", "prompt_text", default=None, help="Text to continue (a model with a tokenizer).")
@click.option("--prompt-ids", default=None, help=f"Comma-separated token ids [default: {DEFAULT_PROMPT} "
              "when there is no --prompt].")
@click.option("--tokens", "--steps", "tokens", type=click.IntRange(1), default=4, show_default=True,
              help="Tokens to generate.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="ScheduleConfig JSON.")
@click.option("--target", type=click.Choice(sorted(TARGETS)), default=None)
@click.option("--dtype", type=DTYPES, default="F32", show_default=True)
@click.option("--policy", type=click.Choice(["list", "random"]), default="list", show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@quant_options
@vm_option
@click.option("--no-check", is_flag=True, help="Skip the eager model: feed back the VM's own argmax.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON report instead of lines.")
@clean_errors
def decode_cmd(model: str | Path, prompt_text: str | None, prompt_ids: str | None, tokens: int,
               config_path: str | None, target: str | None, dtype: str, policy: str, seed: int,
               quant: str | None, group: int, vm_name: str, no_check: bool, as_json: bool) -> None:
    """Greedy-decode MODEL (or --checkpoint) on the ReferenceVM (or --vm), the eager model alongside;
    print the text and the token ids. Exit 1 if the VM and the eager model disagree."""
    from amkspec.lower import resolve_model
    from amkspec.lower.decode import greedy_decode
    from amkspec.models.registry import model_tokenizer

    if prompt_text is not None and prompt_ids is not None:
        fail("give --prompt or --prompt-ids, not both")
    m = resolve_model(model)
    tokenizer = model_tokenizer(m)
    if prompt_text is not None:
        if tokenizer.tokenizer is None:
            fail(f"--prompt: {tokenizer.note}; use --prompt-ids")
        ids = tokenizer.encode(prompt_text)
        if not ids:
            fail("--prompt: the text has no tokens")
    else:
        ids = parse_prompt_ids(prompt_ids if prompt_ids is not None else DEFAULT_PROMPT)
    config = read_config(config_path)
    read_model_weights(m)  # read now, with a progress bar; greedy_decode takes them from the import
    if not no_check and m.native_quant:
        read_model_weights(m, native=False)  # the eager model's float32 values
    bar = Bar(len(ids) + tokens - 1, "decoding", "launch")

    def on_step(step: DecodeStep) -> None:
        bar.update()
        if not as_json:
            click.echo(_step_line(step))

    try:
        run = greedy_decode(m, ids, tokens, config=config, target=target, dtype=DType[dtype],
                            quant=quant_spec(quant, group), policy=policy_of(policy, seed),
                            eager=not no_check,
                            on_step=on_step, make_vm=lambda p: make_vm(vm_name, p, policy_of(policy, seed)))
    finally:
        bar.close()
    new_ids = run.vm_generated[0]
    text = tokenizer.decode(new_ids) if tokenizer.tokenizer is not None else None
    if as_json:
        echo_json({"model": m.name, "dtype": dtype, "vm": vm_name, "prompt": prompt_text, "prompt_ids": ids,
                   "new_ids": new_ids, "text": text, "agree": run.agree, "lowered": run.lowered,
                   "steps": [{"pos": s.pos, "fed": list(s.fed), "vm_next": list(s.vm_next),
                              "eager_next": list(s.eager_next or []),
                              "check": s.check.to_dict() if s.check else None} for s in run.steps]})
    else:
        click.echo(f"prompt ids: {ids}")
        click.echo(f"new ids: {new_ids}")
        if text is not None:
            click.echo(f"text: {tokenizer.decode([*ids, *new_ids])}")
        verdict = "no eager check" if no_check else ("VM and eager agree" if run.agree else
                                                     "VM and eager DISAGREE")
        click.echo(f"{len(run.steps)} launches, {run.lowered} lowering(s); "
                   f"max abs err {run.max_abs_err:.3g}; "
                   f"{verdict}")
    if not run.agree:
        raise SystemExit(EXIT_REJECTED)
