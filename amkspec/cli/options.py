"""Options and arguments the commands share, each refusing what it cannot honour (exit 2, one line).

``MODEL`` / ``--checkpoint PATH`` (the lowering guide, "Real checkpoints"): a command takes a model
name (a preset or a built-in checkpoint) as its MODEL argument, or any checkpoint file or directory
with ``--checkpoint PATH`` (exactly one of the two). The command receives ``model``: the name, or the
checkpoint's :class:`~pathlib.Path`, or with ``--dequantize`` the model's
:class:`~amkspec.models.ModelConfig` with its native quantized tensors turned into float32 — each of
which :func:`amkspec.lower.resolve_model` accepts.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from amkspec import vms
from amkspec.cli.base import fail
from amkspec.cli.progress import Bar
from amkspec.ir import TARGETS, MegakernelProgram

if TYPE_CHECKING:
    from amkspec.models import ModelConfig
    from amkspec.vm import Policy


SEED_MAX = 2**64 - 1
"""The largest seed: every seed feeds ``torch.Generator.manual_seed`` or ``random.Random`` (uint64)."""

SEED = click.IntRange(0, SEED_MAX)
"""``--seed``: an integer in [0, 2**64 - 1]."""

MIN_TIMEOUT_S = 0.001
"""The shortest ``--timeout``: Z3 counts whole milliseconds, and 0 ms would mean *no* timeout."""


class FiniteFloatRange(click.FloatRange):
    """A :class:`click.FloatRange` that also refuses ``nan`` (which passes every range comparison)
    and ``±inf``: every float option of amkspec is of this type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        number: float = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


SHARE = FiniteFloatRange(0, 1)
"""A share of trials (``--explore``, ``--probe``): a finite number in [0, 1]."""


class Timeout(FiniteFloatRange):
    """Seconds: a finite number of at least :data:`MIN_TIMEOUT_S` and at most ``max_s`` (``nan``,
    ``inf`` and sub-millisecond values are refused, since Z3 would read them as "no timeout" or fail)."""

    name = "seconds"

    def __init__(self, max_s: float | None = None) -> None:
        super().__init__(MIN_TIMEOUT_S, max_s)


TIMEOUT = Timeout()
"""``--timeout`` of the solver and conformance commands."""

VM_TIMEOUT = Timeout(3600)
"""``--timeout`` of the megakernel VMs' watchdog (``evaluate``, ``search``): at most an hour."""


def executor_options(func: Any) -> Any:
    """``--executor serial|local|ray``, ``--workers N`` and ``--address ADDR`` ("Running at scale")."""
    from amkspec.executors import EXECUTORS

    options = [
        click.option("--executor", type=click.Choice(EXECUTORS), default="serial", show_default=True,
                     help="Where the jobs run: this process, a local process pool, or Ray."),
        click.option("--workers", type=click.IntRange(1, 4096), default=None,
                     help="Parallel workers (local: processes, default the CPU count; ray: the CPUs of a "
                          "local Ray, or the jobs in flight on a cluster)."),
        click.option("--address", default=None, metavar="ADDR",
                     help="Join the Ray cluster at ADDR (host:port, or 'auto'), instead of starting one."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


PRESETS = ("toy", "toy-1L", "toy-2L", "medium", "small")
"""The preset models (:data:`amkspec.models.MODELS`; torch is not imported to list them)."""

BUILTINS = ("smollm2-135m",)
"""The built-in checkpoints (:data:`amkspec.models.checkpoint.BUILTIN_CHECKPOINTS`)."""

MODEL_NAMES = click.Choice([*PRESETS, *BUILTINS])

LOWERING_ONLY = ("small",)
"""Presets whose weights are not made to run them (lowering only)."""


def chosen_model(name: str | None, checkpoint: str | None, *, runnable: bool = False) -> str | Path:
    """The model a command was given: ``name`` or ``Path(checkpoint)``; exactly one (else exit 2)."""
    if (name is None) == (checkpoint is None):
        fail("give a MODEL name or --checkpoint PATH (one of the two)" if name is None
             else "give a MODEL name or --checkpoint PATH, not both")
    if checkpoint is not None:
        if not Path(checkpoint).exists():
            fail(f"--checkpoint {checkpoint}: no such file or directory")
        return Path(checkpoint)
    assert name is not None
    if runnable and name in LOWERING_ONLY:
        fail(f"model {name!r} is a lowering-only preset (its weights are not made): use one of "
             f"{', '.join(n for n in MODEL_NAMES.choices if n not in LOWERING_ONLY)} or --checkpoint PATH")
    return name


def dequantized(model: str | Path, dequantize: bool) -> Any:
    """``model``, or its config with every weight float32 when ``dequantize`` (``--dequantize``)."""
    if not dequantize:
        return model
    import attrs

    from amkspec.lower import resolve_model

    return attrs.evolve(resolve_model(model), native_quant=False)


DEQUANTIZE_HELP = "Run a GGUF checkpoint's Q4_1/Q8_0 tensors as float32 (default: natively)."


def model_argument(*, runnable: bool = False, dequantize: bool = True) -> Any:
    """Decorator: the optional ``MODEL`` argument and ``--checkpoint PATH`` (and ``--dequantize``
    unless ``dequantize`` is False), passed on as ``model``. ``runnable``: refuse the lowering-only
    presets."""

    def decorate(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, model: str | None = None, checkpoint: str | None = None,
                    dequantize: bool = False, **kwargs: Any) -> Any:
            chosen = chosen_model(model, checkpoint, runnable=runnable)
            return func(*args, model=dequantized(chosen, dequantize), **kwargs)

        if dequantize:
            wrapper = click.option("--dequantize", is_flag=True, help=DEQUANTIZE_HELP)(wrapper)
        wrapper = click.option("--checkpoint", type=click.Path(), metavar="PATH",
                               help="A GGUF file or an HF checkpoint directory instead of MODEL.")(wrapper)
        return click.argument("model", type=MODEL_NAMES, required=False)(wrapper)

    return decorate


def model_label(model: Any) -> str:
    """A name for the model in output (a checkpoint by its file or directory name)."""
    return model.name if isinstance(model, Path) or hasattr(model, "vocab") else str(model)


DTYPES = click.Choice(["F32", "F16", "BF16"])


def quant_options(func: Any) -> Any:
    """``--quant {4,8}`` and ``--group G``: weight-only quantization of the layers' projections."""
    func = click.option("--group", type=int, default=128, show_default=True, help="Quantization group.")(func)
    return click.option("--quant", type=click.Choice(["4", "8"]), default=None,
                        help="Quantize the layers' projections to I4 or I8 (symmetric).")(func)


def quant_spec(bits: str | None, group: int) -> Any:
    from amkspec.models import QuantSpec

    if bits is None:
        return None
    try:
        return QuantSpec(int(bits), group)
    except ValueError as exc:
        fail(str(exc))


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


def policy_of(name: str, seed: int) -> Policy:
    from amkspec.vm import ListOrder, SeededRandom

    return SeededRandom(seed) if name == "random" else ListOrder()


DEFAULT_PROMPT = "7,25,103"
"""The prompt of ``decode`` (and of the demo) when none is given."""


def parse_prompt_ids(text: str, option: str = "--prompt-ids") -> list[int]:
    """Token ids of ``--prompt-ids`` ("1,2,3")."""
    try:
        tokens = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        fail(f"{option}: expected comma-separated integers, got {text!r}")
    if not tokens:
        fail(f"{option}: give at least one token id")
    return tokens


def read_model_weights(m: ModelConfig, native: bool | None = None) -> Any:
    """The model's weights (:func:`~amkspec.models.registry.model_weights`; ``native`` False: the
    float32 ones), with a progress bar on a terminal while a checkpoint is read."""
    from amkspec.models.registry import checkpoint_of, model_weights

    found = checkpoint_of(m)
    if found is None:
        return model_weights(m)
    what = "float32 " if native is False and m.native_quant else ""
    bar = Bar(len(found.tensor_types), f"reading {what}{m.name}", "tensor")
    try:
        return found.read_weights(bar.update, native=native)
    finally:
        bar.close()


def bound_weights(weights: Mapping[str, Any]) -> dict[str, Any]:
    """The arrays a program binds: a native quantized weight as its levels and ``.scales`` table."""
    from amkspec.models.quant import native_weights

    return native_weights(weights)[1]


TARGET_NAMES = click.Choice(sorted(TARGETS))


def load_lowering(spec: str | None) -> Any:
    """``module:function`` → the function (a plugged-in lowering); exit 2 if it cannot be imported."""
    if spec is None:
        return None
    import importlib

    module, _, name = spec.partition(":")
    try:
        func = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        fail(f"--lowering {spec}: cannot import it ({type(exc).__name__}); use module:function")
    if not callable(func):
        fail(f"--lowering {spec}: not a function")
    return func


def lowering_option(func: Any) -> Any:
    """``--lowering module:function``: evaluate another lowering (see :data:`amkspec.search.Lowering`)."""
    return click.option("--lowering", "lowering_spec", default=None, metavar="MODULE:FUNC",
                        help="Plug in another lowering (model, target, config, pos) -> program.")(func)
