"""``amkspec run`` and ``replay``: programs on the VMs (spec §2, §8).

``run --steps N`` on a program file: when the program is exactly what ``lower`` makes for a
preset model at its recorded position (checked by re-lowering it), each further launch is
re-lowered at the next position, fed the argmax of the previous logits, and given the previous
KV caches. Any other program runs once (``--steps`` above 1 is refused): its positions are baked
into its params, so feeding it a later position would be inconsistent.

``replay`` follows an event trace (a witness) on the ReferenceVM with shadow state (spec §2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
import numpy as np

import amkspec
from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.display import display_program
from amkspec.cli.files import read_json_file, read_npz, read_tensors, refuse_inputs, save_npz, to_numpy
from amkspec.cli.options import (
    DEQUANTIZE_HELP,
    MODEL_NAMES,
    SEED,
    bound_weights,
    chosen_model,
    dequantized,
    make_vm,
    policy_of,
    read_model_weights,
    vm_option,
)
from amkspec.exit_codes import EXIT_OK, EXIT_REJECTED
from amkspec.ir import AmkspecError, BufferKind, DType, MegakernelProgram
from amkspec.text import count, no_such_finding

if TYPE_CHECKING:
    from amkspec.models import ModelConfig


def _typed_inputs(prog: MegakernelProgram, raw: Mapping[str, Any]) -> dict[str, Any]:
    """JSON numbers become arrays of each IO_INPUT's dtype class (int32 or float32). For an integer
    input only whole numbers within int32 convert (``7`` or ``7.0``); anything else (``7.9``, a
    number outside int32) stays as it is, so that binding refuses it (spec §2: a conversion must be
    lossless) instead of truncating or wrapping it."""
    out = dict(raw)
    for buf in prog.buffers:
        value = out.get(buf.name)
        if buf.kind is not BufferKind.IO_INPUT or not isinstance(value, np.ndarray):
            continue
        if value.dtype.kind not in "iuf":
            continue
        if not buf.dtype.is_integer:
            out[buf.name] = value.astype(np.float32)
        elif _whole_int32(value):
            out[buf.name] = value.astype(np.int32)
    return out


def _whole_int32(value: np.ndarray) -> bool:
    """Every element is a whole number within int32 (so casting it to int32 loses nothing)."""
    if value.size == 0:
        return True
    int32 = np.iinfo(np.int32)
    if value.dtype.kind == "f" and not bool(np.all(np.isfinite(value) & (value == np.trunc(value)))):
        return False
    return bool(int32.min <= value.min() and value.max() <= int32.max)


def relowerable(prog: MegakernelProgram, given: ModelConfig | None = None
                ) -> tuple[ModelConfig, bool, Any] | None:
    """The model (a preset, or ``given``), ``compat`` flag and quantization that re-create ``prog``
    exactly, or None."""
    from amkspec.lower import lower
    from amkspec.models import MODELS, QuantSpec

    meta = prog.meta
    pos, dtype, tokens = meta.get("pos"), meta.get("dtype"), [b for b in prog.buffers if b.name == "token_id"]
    if not isinstance(pos, int) or dtype not in ("F32", "F16", "BF16") or not tokens:
        return None
    text = amkspec.dumps(prog)
    quant = None
    if meta.get("quantized") and isinstance(meta.get("quant"), dict) and "native" not in meta["quant"]:
        try:
            quant = QuantSpec(int(meta["quant"]["bits"]), int(meta["quant"]["group"]))
        except (KeyError, TypeError, ValueError):
            return None
    for model in [*MODELS.values(), *([given] if given is not None else [])]:
        if model.source != meta.get("model") or model.n_layers != meta.get("n_layers"):
            continue
        for compat in (False, True):
            try:
                again = lower(model, prog.target, prog.config, pos=pos, dtype=DType[dtype],
                              B=tokens[0].shape[0] if tokens[0].shape else 1, quant=quant, compat=compat)
            except amkspec.ir.AmkspecError:
                continue
            if amkspec.dumps(again) == text:
                return model, compat, quant
    return None


@main.command("run")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--weights", "weights_path", type=click.Path(dir_okay=False),
              help="Weights by buffer source (.npz or .safetensors).")
@click.option("--model", "model_name", type=MODEL_NAMES, help="Take the weights of this model instead.")
@click.option("--checkpoint", type=click.Path(), metavar="PATH",
              help="Take the weights of this checkpoint instead.")
@click.option("--dequantize", is_flag=True, help=DEQUANTIZE_HELP)
@click.option("--inputs", "inputs_path", required=True, type=click.Path(dir_okay=False))
@click.option("--kv", "kv_path", type=click.Path(dir_okay=False), help="KV caches by buffer name (.npz).")
@click.option("--steps", type=click.IntRange(1), default=1, show_default=True,
              help="Greedy launches (see module doc).")
@click.option("--policy", type=click.Choice(["list", "random"]), default="list", show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of --policy random.")
@vm_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Outputs as .npz.")
@clean_errors
def run_cmd(program: str, weights_path: str | None, model_name: str | None, checkpoint: str | None,
            dequantize: bool, inputs_path: str, kv_path: str | None, steps: int, policy: str, seed: int,
            vm_name: str, output: str | None) -> None:
    """Run PROGRAM on the ReferenceVM (or --vm) with --weights, or a model's (--model/--checkpoint);
    print each launch's argmax; exit 1 if refused or stuck."""
    import torch

    from amkspec.lower import lower, resolve_model
    from amkspec.vm import DeadlockError, ExecutionError, RefusedProgram

    if [weights_path, model_name, checkpoint].count(None) != 2:
        fail("give exactly one of --weights, --model and --checkpoint")
    if output:
        refuse_inputs(output, [program, weights_path, inputs_path, kv_path])
    prog = load_program(program)
    model_of = chosen_model(model_name, checkpoint) if weights_path is None else None
    m = resolve_model(dequantized(model_of, dequantize)) if model_of is not None else None
    origin = relowerable(prog, m) if steps > 1 else None
    if steps > 1 and origin is None:
        fail(f"{program}: --steps {steps} needs a program made by `amkspec lower` (re-lowered per step)")
    if origin is not None:
        _check_positions(program, int(prog.meta["pos"]), steps, origin[0])
    weights = bound_weights(read_model_weights(m)) if m is not None else read_tensors(str(weights_path))
    inputs = read_tensors(inputs_path)
    if inputs_path.lower().endswith(".json"):
        inputs = _typed_inputs(prog, inputs)
    _check_pos_input(prog, inputs, steps, inputs_path)
    kv: dict[str, Any] | None = read_tensors(kv_path) if kv_path else None
    saved: dict[str, np.ndarray] = {}
    first = prog
    for step in range(steps):
        if step and origin is not None:
            model, compat, quant = origin
            prog = lower(model, first.target, first.config, pos=int(first.meta["pos"]) + step,
                         dtype=DType[first.meta["dtype"]], B=len(inputs["token_id"]), quant=quant,
                         compat=compat)
        try:
            vm = make_vm(vm_name, prog, policy_of(policy, seed))
            out = vm.run(weights, inputs, kv)
        except RefusedProgram as exc:
            refused = f"{program}: refused: {str(exc).splitlines()[0]}"
            fail(_partial(refused, output, saved, step), EXIT_REJECTED)
        except (DeadlockError, ExecutionError) as exc:
            fail(_partial(f"{program}: {str(exc).splitlines()[0]}", output, saved, step), EXIT_REJECTED)
        except AmkspecError as exc:
            fail(_partial(f"{program}: {exc}", output, saved, step))
        kv = {b.name: out[b.name] for b in prog.buffers if b.kind is BufferKind.KV_CACHE}
        prefix = f"s{step}__" if steps > 1 else ""
        saved.update({prefix + k: to_numpy(v) for k, v in out.items()})
        line = f"launch {step}"
        if "logits" in out:
            nxt = out["logits"].float().argmax(-1).reshape(-1).to(torch.int32)
            line += f": argmax {nxt.tolist()}"
            inputs = {**inputs, "token_id": nxt.numpy()}
            if "pos" in inputs:  # the next launch of a lowered decode step
                inputs["pos"] = np.asarray(inputs["pos"]) + 1
        stats = getattr(vm, "last_stats", None)
        if stats is not None:
            line += f" (numerics {stats.compute_s * 1e3:.2f} ms, scheduling {stats.sched_s * 1e3:.2f} ms)"
        click.echo(line)
    if output:
        save_npz(output, saved, [program, weights_path, inputs_path, kv_path])


def _partial(message: str, output: str | None, saved: Mapping[str, np.ndarray], done: int) -> str:
    """``message`` plus what became of ``--output`` when launch ``done`` failed: the completed
    launches are written (each array prefixed ``s<step>__``), or nothing is."""
    if output is None:
        return message
    if not saved:
        return f"{message}; nothing was written to {output}"
    save_npz(output, saved)
    return f"{message}; launches 0..{done - 1} (of those asked) were written to {output}"


def _check_positions(program: str, pos: int, steps: int, model: ModelConfig) -> None:
    """``--steps`` launches from ``pos`` must stay below the model's ``max_seq`` (checked before any runs)."""
    last = pos + steps - 1
    if last >= model.max_seq:
        fail(f"{program}: --steps {steps} from position {pos} needs positions up to {last}, "
             f"but model {model.name!r} has max_seq {model.max_seq}; nothing was run")


def _check_pos_input(prog: MegakernelProgram, inputs: Mapping[str, Any], steps: int, where: str) -> None:
    """Every value of the ``pos`` input (plus the later launches) indexes a row of each KV cache."""
    rows = [b.shape[-3] for b in prog.buffers if b.kind is BufferKind.KV_CACHE and len(b.shape) >= 3]
    value = inputs.get("pos")
    if not rows or value is None or not any(b.name == "pos" for b in prog.buffers):
        return
    try:
        pos = np.asarray(value)
        if pos.dtype.kind not in "iu" or pos.size == 0:
            return
        lo, hi = int(pos.min()), int(pos.max()) + steps - 1
    except (TypeError, ValueError):
        return
    if lo < 0 or hi >= min(rows):
        fail(f"{where}: input 'pos' reaches position {hi if lo >= 0 else lo}, outside the KV caches' "
             f"rows [0, {min(rows)}); nothing was run")


def _arrays(path: str | None) -> dict[str, Any]:
    """Named arrays from an ``.npz`` file or a JSON object of nested lists."""
    if path is None:
        return {}
    if path.endswith(".npz"):
        return read_npz(path)
    doc = read_json_file(path)
    if not isinstance(doc, dict):
        fail(f"{path}: expected a JSON object of named arrays")
    return doc


def _witness(path: str, findings: list[Any], finding: int | None) -> Any:
    """The witness of finding ``finding`` (1-based over all findings, as ``explain --finding``
    counts them), or of the first finding that has one."""
    if finding is None:
        witnessed = [f["witness"] for f in findings if isinstance(f, dict) and f.get("witness")]
        if not witnessed:
            fail(f"{path}: none of its {count(len(findings), 'finding')} has a witness to replay")
        return witnessed[0]
    if finding > len(findings):
        fail(f"{path}: " + no_such_finding(finding, f"it has {count(len(findings), 'finding')}"))
    chosen = findings[finding - 1]
    if not isinstance(chosen, dict) or not chosen.get("witness"):
        status = chosen.get("status") if isinstance(chosen, dict) else "not an object"
        fail(f"{path}: finding {finding} ({status}) has no witness to replay")
    return chosen["witness"]


def _trace(path: str, finding: int | None) -> Any:
    """The events of a trace file: a list of events, a witness, or ``explain --json`` output."""
    doc = read_json_file(path)
    if isinstance(doc, dict) and "findings" not in doc and "events" not in doc:
        fail(f"{path}: not a trace: expected a list of events, a witness object with 'events', "
             "or the output of explain --json")
    if isinstance(doc, dict) and "findings" in doc:
        if not isinstance(doc["findings"], list):
            fail(f"{path}: 'findings' must be a list")
        return _witness(path, doc["findings"], finding)
    return doc


def _report(prog: MegakernelProgram, result: Any, as_json: bool, deadlock: str | None) -> int:
    report = result.report if result is not None else None
    lines = report.describe(prog) if report is not None else []
    if as_json:
        echo_json({
            "order": result.stats.order if result is not None else [],
            **(report.to_dict() if report is not None else {"stale_reads": [], "conflicts": []}),
            "deadlock": deadlock,
        })
    else:
        for line in lines:
            click.echo(line)
        if deadlock:
            click.echo(deadlock)
        if not lines and not deadlock:
            click.echo("every read saw complete data and no writes overlapped")
    return EXIT_REJECTED if lines or deadlock else EXIT_OK


@main.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="weights by source (.npz or JSON)")
@click.option("--inputs", type=click.Path(dir_okay=False), help="IO inputs by name (.npz or JSON)")
@click.option("--finding", type=click.IntRange(min=1),
              help="which finding of explain --json to replay (1-based, as explain numbers them; "
                   "default: the first with a witness)")
@click.option("--seed", type=SEED, default=0, show_default=True, help="seed of synthetic weights, inputs")
@click.option("--no-finish", is_flag=True, help="stop after the trace instead of finishing in list order")
@click.option("--json", "as_json", is_flag=True, help="print the stale reads and conflicts as JSON")
@clean_errors
def replay(
    program: str, trace: str, weights: str | None, inputs: str | None, finding: int | None, seed: int,
    no_finish: bool, as_json: bool,
) -> None:
    """Replay TRACE on PROGRAM with shadow state; exit 1 if a read was stale, writes overlapped or it
    deadlocked. Missing weights and inputs are synthesised; PROGRAM need not pass validate()."""
    from amkspec.vm import DeadlockError, replay_trace

    prog = load_program(program)
    if not as_json:
        prog = display_program(prog)
    events = _trace(trace, finding)
    try:
        result = replay_trace(prog, events, weights=_arrays(weights), inputs=_arrays(inputs), seed=seed,
                              finish=not no_finish)
        deadlock = None
    except DeadlockError as exc:
        result, deadlock = None, str(exc)
    raise SystemExit(_report(prog, result, as_json, deadlock))
