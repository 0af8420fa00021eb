"""``amkspec lower``, ``run``, ``decode`` and ``weights``: lowering and running models (the lowering guide).

``run --steps N`` on a program file: when the program is exactly what ``lower`` makes for a
preset model at its recorded position (checked by re-lowering it), each further launch is
re-lowered at the next position, fed the argmax of the previous logits, and given the previous
KV caches. Any other program runs once (``--steps`` above 1 is refused): its positions are baked
into its params, so feeding it a later position would be inconsistent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import numpy as np

import amkspec
from amkspec import vms
from amkspec.cli.base import clean_errors, echo_json, fail, load_program, main
from amkspec.cli.demo import demo_step
from amkspec.cli.files import (
    check_size,
    output_file,
    read_json_file,
    read_npz,
    refuse_inputs,
    save_npz,
    write_output,
)
from amkspec.cli.params import SEED
from amkspec.exit_codes import EXIT_REJECTED
from amkspec.ir import TARGETS, AmkspecError, BufferKind, DType, MegakernelProgram, ScheduleConfig

if TYPE_CHECKING:  # torch is imported only when a command that needs it runs
    import torch

    from amkspec.lower.decode import DecodeStep
    from amkspec.models import ModelConfig
    from amkspec.vm import Policy

DEFAULT_PROMPT = "7,25,103"
"""The prompt of ``decode`` (and of the demo) when none is given."""

MODEL_NAMES = click.Choice(["medium", "small", "toy", "toy-1L", "toy-2L"])
DTYPES = click.Choice(["F32", "F16", "BF16"])


def quant_options(func: Any) -> Any:
    """``--quant {4,8}`` and ``--group G``: weight-only quantization of the layers' projections."""
    func = click.option("--group", type=int, default=128, show_default=True, help="Quantization group.")(func)
    return click.option("--quant", type=click.Choice(["4", "8"]), default=None,
                        help="Quantize the layers' projections to I4 or I8 (symmetric).")(func)


def _quant(bits: str | None, group: int) -> Any:
    from amkspec.models import QuantSpec

    if bits is None:
        return None
    try:
        return QuantSpec(int(bits), group)
    except ValueError as exc:
        fail(str(exc))


def read_config(path: str | None) -> dict[str, Any] | None:
    """The ScheduleConfig document of a JSON file (:func:`amkspec.lower.knobs.config_document`: the
    config object itself, a program's ``config``, or the ``schedule_config`` of ``amkspec propose``).

    The document is returned as written: :func:`amkspec.lower.lower` judges it with the knob checks
    (:func:`amkspec.lower.knobs.require_valid`), as ``evaluate`` and the JSON Schema do, so a wrong
    knob is a ``knob:type``/``knob:range``/``knob:unknown`` issue (exit 2).
    """
    if path is None:
        return None
    from amkspec.lower.knobs import config_document

    doc = config_document(read_json_file(path, "a JSON config"))
    if not isinstance(doc, dict):
        fail(f"{path}: expected a ScheduleConfig object")
    return doc


VM_CHOICE = click.Choice(vms.VM_NAMES)
"""``--vm``: the ReferenceVM, the megakernel's CPU build, or the megakernel on a GPU (spec §8)."""


def vm_option(func: Any) -> Any:
    """``--vm reference|cpu-kernel|cuda``."""
    return click.option("--vm", "vm_name", type=VM_CHOICE, default="reference", show_default=True,
                        help="VM to run on: the ReferenceVM or the megakernel (CPU build or GPU).")(func)


def make_vm(vm_name: str, prog: MegakernelProgram, policy: Policy) -> Any:
    """The VM ``--vm`` names for ``prog``; an unusable megakernel backend fails with exit 2."""
    if vm_name == "reference":
        return vms.make_vm(vm_name, prog, policy=policy)
    from vm_cuda import BuildError
    from vm_cuda.cuda import CudaUnavailable

    try:
        return vms.make_vm(vm_name, prog, policy=policy)
    except (BuildError, CudaUnavailable) as exc:
        fail(f"--vm {vm_name}: {str(exc).splitlines()[0]}")


def _policy(name: str, seed: int) -> Policy:
    from amkspec.vm import ListOrder, SeededRandom

    return SeededRandom(seed) if name == "random" else ListOrder()


def read_tensors(path: str) -> dict[str, Any]:
    """Tensors from ``.npz``, ``.safetensors`` or (inputs only) ``.json`` ``{name: nested list}``."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".npz":
            return read_npz(path)
        if suffix == ".safetensors":
            from safetensors import SafetensorError
            from safetensors.torch import load_file

            check_size(path)
            try:
                return dict(load_file(path))
            except SafetensorError as exc:
                raise ValueError(str(exc)) from None
        if suffix == ".json":
            doc = read_json_file(path)
            if not isinstance(doc, dict):
                fail(f"{path}: expected an object of name → list")
            return {str(k): np.asarray(v) for k, v in doc.items()}
    except (OSError, ValueError, MemoryError) as exc:
        fail(f"{path}: cannot read tensors: {str(exc) or type(exc).__name__}")
    fail(f"{path}: unknown tensor file type {suffix!r} (use .npz, .safetensors or .json)")


def _numpy(t: torch.Tensor) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


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


def relowerable(prog: MegakernelProgram) -> tuple[ModelConfig, bool, Any] | None:
    """The preset model, ``compat`` flag and quantization that re-create ``prog`` exactly, or None."""
    from amkspec.lower import lower
    from amkspec.models import MODELS, QuantSpec

    meta = prog.meta
    pos, dtype, tokens = meta.get("pos"), meta.get("dtype"), [b for b in prog.buffers if b.name == "token_id"]
    if not isinstance(pos, int) or dtype not in ("F32", "F16", "BF16") or not tokens:
        return None
    text = amkspec.dumps(prog)
    quant = None
    if meta.get("quantized") and isinstance(meta.get("quant"), dict):
        try:
            quant = QuantSpec(int(meta["quant"]["bits"]), int(meta["quant"]["group"]))
        except (KeyError, TypeError, ValueError):
            return None
    for model in MODELS.values():
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


NO_CONFIG_NOTE = (
    "amkspec: note: no --config: the original's auto tiling (GEMV tiles of 32 columns, no fusion, SM "
    "placement or pages); evaluate, search and propose start from the default config instead: "
    "'amkspec propose MODEL --target T' prints it and --config takes that output"
)
"""Why ``lower`` without ``--config`` gives another program than ``evaluate``'s default (stderr)."""


@main.command("lower")
@click.argument("model", type=MODEL_NAMES)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="ScheduleConfig JSON, a "
              "program (its config) or 'amkspec propose' output (default: the original's auto tiling, "
              "not the default config evaluate and search start from).")
@click.option("--pos", type=int, default=0, show_default=True, help="Absolute position of the token.")
@click.option("--target", type=click.Choice(sorted(TARGETS)), default=None, help="GPU target record.")
@click.option("--dtype", type=DTYPES, default="F32", show_default=True)
@click.option("--batch", type=int, default=1, show_default=True, help="Sequences decoded together.")
@click.option("--compat", is_flag=True, help="Record but do not consume sm_assignment/page_allocation.")
@quant_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
@clean_errors
def lower_cmd(model: str, config_path: str | None, pos: int, target: str | None, dtype: str, batch: int,
              compat: bool, quant: str | None, group: int, output: str | None) -> None:
    """Lower one decode step of MODEL into a program (the lowering guide)."""
    from amkspec.lower import lower

    if output:
        refuse_inputs(output, [config_path])
    prog = lower(model, target, read_config(config_path), pos=pos, dtype=DType[dtype], B=batch,
                 quant=_quant(quant, group), compat=compat)
    if config_path is None:
        click.echo(NO_CONFIG_NOTE, err=True)
    if output:
        write_output(output, amkspec.dumps(prog) + "\n", [config_path])
    else:
        click.echo(amkspec.dumps(prog))


@main.command("weights")
@click.argument("model", type=MODEL_NAMES)
@click.option("--dtype", type=DTYPES, default=None, help="Default: the model's dtype.")
@click.option("--seed", type=SEED, default=None, help="Default: the model's seed (0).")
@quant_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help=".npz or .safetensors")
@clean_errors
def weights_cmd(model: str, dtype: str | None, seed: int | None, quant: str | None, group: int,
                output: str) -> None:
    """Write MODEL's deterministic weights, keyed by state-dict key (= buffer source).

    With ``--quant`` the projections are written as their stored levels plus ``<key>.scales``,
    ready for a program lowered with the same ``--quant``/``--group``.
    """
    from amkspec.lower import resolve_model
    from amkspec.models import make_weights, quantize_weights

    m = resolve_model(model)
    weights = make_weights(m, DType[dtype] if dtype else None, seed)
    spec = _quant(quant, group)
    if spec is not None:
        weights = quantize_weights(m, weights, spec)[0]
    if output.endswith(".safetensors"):
        from safetensors import SafetensorError
        from safetensors.torch import save_file

        with output_file(output) as tmp:
            try:
                save_file(weights, tmp)
            except SafetensorError as exc:
                fail(f"{output}: cannot write: {exc}")
    elif output.endswith(".npz"):
        save_npz(output, {k: _numpy(v) for k, v in weights.items()})
    else:
        fail(f"{output}: use a .npz or .safetensors file name")
    click.echo(f"{output}: {len(weights)} tensors, {sum(v.numel() for v in weights.values())} parameters")


@main.command("run")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--weights", "weights_path", required=True, type=click.Path(dir_okay=False))
@click.option("--inputs", "inputs_path", required=True, type=click.Path(dir_okay=False))
@click.option("--kv", "kv_path", type=click.Path(dir_okay=False), help="KV caches by buffer name (.npz).")
@click.option("--steps", type=click.IntRange(1), default=1, show_default=True,
              help="Greedy launches (see module doc).")
@click.option("--policy", type=click.Choice(["list", "random"]), default="list", show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of --policy random.")
@vm_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Outputs as .npz.")
@clean_errors
def run_cmd(program: str, weights_path: str, inputs_path: str, kv_path: str | None, steps: int, policy: str,
            seed: int, vm_name: str, output: str | None) -> None:
    """Run PROGRAM on the ReferenceVM (or --vm); print each launch's argmax; exit 1 if refused or stuck."""
    import torch

    from amkspec.lower import lower
    from amkspec.vm import DeadlockError, ExecutionError, RefusedProgram

    if output:
        refuse_inputs(output, [program, weights_path, inputs_path, kv_path])
    prog = load_program(program)
    origin = relowerable(prog) if steps > 1 else None
    if steps > 1 and origin is None:
        fail(f"{program}: --steps {steps} needs a program made by `amkspec lower` (re-lowered per step)")
    if origin is not None:
        _check_positions(program, int(prog.meta["pos"]), steps, origin[0])
    weights = read_tensors(weights_path)
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
            vm = make_vm(vm_name, prog, _policy(policy, seed))
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
        saved.update({prefix + k: _numpy(v) for k, v in out.items()})
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


def _prompt(text: str) -> list[int]:
    """Token ids of ``--prompt`` ("1,2,3")."""
    try:
        tokens = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        fail(f"--prompt: expected comma-separated integers, got {text!r}")
    if not tokens:
        fail("--prompt: give at least one token id")
    return tokens


def _step_line(step: DecodeStep) -> str:
    check = step.check
    err = f"max abs err {check.max_abs_err:.3g}" if check is not None else "no eager check"
    verdict = "" if check is None else (" ok" if check.passed else " DISAGREE")
    eager = list(step.eager_next or [])
    return f"pos {step.pos:3d} fed {list(step.fed)} vm→{list(step.vm_next)} eager→{eager} {err}{verdict}"


@main.command("decode")
@click.argument("model", type=MODEL_NAMES)
@click.option("--prompt", default=DEFAULT_PROMPT, show_default=True, help="Comma-separated token ids.")
@click.option("--steps", type=click.IntRange(1), default=4, show_default=True, help="Tokens to generate.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="ScheduleConfig JSON.")
@click.option("--target", type=click.Choice(sorted(TARGETS)), default=None)
@click.option("--dtype", type=DTYPES, default="F32", show_default=True)
@click.option("--policy", type=click.Choice(["list", "random"]), default="list", show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@quant_options
@vm_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON report instead of lines.")
@clean_errors
def decode_cmd(model: str, prompt: str, steps: int, config_path: str | None, target: str | None, dtype: str,
               policy: str, seed: int, quant: str | None, group: int, vm_name: str, as_json: bool) -> None:
    """Greedy-decode MODEL on the ReferenceVM (or --vm) and the eager model side by side; exit 1 if they
    disagree."""
    from amkspec.lower.decode import greedy_decode

    run = greedy_decode(model, _prompt(prompt), steps, config=read_config(config_path), target=target,
                        dtype=DType[dtype], quant=_quant(quant, group), policy=_policy(policy, seed),
                        on_step=None if as_json else lambda s: click.echo(_step_line(s)),
                        make_vm=lambda p: make_vm(vm_name, p, _policy(policy, seed)))
    if as_json:
        echo_json({"model": model, "dtype": dtype, "agree": run.agree, "generated": run.generated[0],
                   "steps": [{"pos": s.pos, "fed": list(s.fed), "vm_next": list(s.vm_next),
                              "eager_next": list(s.eager_next or []),
                              "check": s.check.to_dict() if s.check else None} for s in run.steps]})
    else:
        click.echo(f"generated {run.generated[0]}; max abs err {run.max_abs_err:.3g}; "
                   + ("VM and eager agree" if run.agree else "VM and eager DISAGREE"))
    if not run.agree:
        raise SystemExit(EXIT_REJECTED)


@demo_step
def run_toy_models(examples: Path) -> bool:
    """Lower toy and toy-2L, validate, decode a few steps on the ReferenceVM, compare with eager."""
    from amkspec.lower import lower
    from amkspec.lower.decode import greedy_decode

    click.echo("== toy models: lower (N_tile 64, load_balance SMs, graph_color pages), validate, "
               "decode on the ReferenceVM vs eager ==")
    ok = True
    config = ScheduleConfig(tiling={"gemv": {"N_tile": 64}})
    for name, dtype in (("toy", DType.F32), ("toy-2L", DType.F32), ("toy-2L", DType.BF16)):
        prog = lower(name, "rtx5090", config, pos=0, dtype=dtype)
        result = amkspec.validate(prog)
        run = greedy_decode(name, _prompt(DEFAULT_PROMPT), 4, config=config, target="rtx5090", dtype=dtype)
        agree = sum(s.vm_next == s.eager_next for s in run.steps)
        ok = ok and result.ok and run.agree
        click.echo(f"{name} {dtype.name}: {len(prog.tasks)} tasks, {'valid' if result.ok else 'REJECTED'}, "
                   f"scratch {prog.total_scratch_bytes()} B; {len(run.steps)} launches, "
                   f"generated {run.generated[0]}, argmax agreement {agree}/{len(run.steps)}, "
                   f"max abs err {run.max_abs_err:.3g} -> {'ok' if run.agree else 'DISAGREE'}")
    return ok
