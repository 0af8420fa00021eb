"""``MODEL`` / ``--checkpoint PATH``: how every model command names its model (the lowering guide,
"Real checkpoints").

A command takes a model name (a preset or a built-in checkpoint) as its MODEL argument, or any
checkpoint file or directory with ``--checkpoint PATH`` (exactly one of the two). The command
receives ``model``: the name, or the checkpoint's :class:`~pathlib.Path`, or with ``--dequantize``
the model's :class:`~amkspec.models.ModelConfig` with its native quantized tensors turned into
float32 — each of which :func:`amkspec.lower.resolve_model` accepts.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from amkspec.cli.base import fail

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
