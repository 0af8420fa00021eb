"""Every model by name or path: the presets, the built-in checkpoints, any checkpoint file or directory
(the lowering guide, "Real checkpoints").

:func:`resolve` turns a name, a path or a config into a :class:`~amkspec.models.ModelConfig`;
:func:`model_weights` and :func:`model_tokenizer` give what a config's model runs with: the
deterministic weights of a preset, the imported ones of a checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from amkspec.ir import AmkspecError, DType
from amkspec.models.checkpoint import BUILTIN_CHECKPOINTS, Checkpoint, builtin_path, load_checkpoint
from amkspec.models.config import MODELS, ModelConfig
from amkspec.models.quant import NativeQuant
from amkspec.models.tokenizer import TokenizerRef
from amkspec.models.weights import make_weights, torch_dtype

MODEL_NAMES: tuple[str, ...] = (*MODELS, *BUILTIN_CHECKPOINTS)
"""Every model name: the presets (deterministic weights), then the built-in checkpoints."""


class UnknownModel(AmkspecError, LookupError):
    """A name that is neither a preset nor a built-in checkpoint."""


def checkpoint(model: str | os.PathLike[str]) -> Checkpoint:
    """The checkpoint of a built-in name or of a path."""
    if isinstance(model, str) and model in BUILTIN_CHECKPOINTS:
        return load_checkpoint(builtin_path(model), name=model)
    return load_checkpoint(model)


def resolve(model: ModelConfig | str | os.PathLike[str]) -> ModelConfig:
    """A config itself, a preset or built-in checkpoint by name, or the checkpoint at a path (a string
    that is no name but names an existing file or directory counts as a path). Raises
    :class:`UnknownModel` for any other string and
    :class:`~amkspec.models.refusals.CheckpointRefused` for a checkpoint it refuses."""
    if isinstance(model, ModelConfig):
        return model
    if isinstance(model, str):
        if model in MODELS:
            return MODELS[model]
        if model not in BUILTIN_CHECKPOINTS and not os.path.exists(model):
            raise UnknownModel(f"unknown model {model!r} (known: {', '.join(MODEL_NAMES)}; "
                               "or a checkpoint file or directory)")
    return checkpoint(model).config


def checkpoint_of(config: ModelConfig) -> Checkpoint | None:
    """The checkpoint a config was imported from (None for a preset)."""
    if config.checkpoint is None:
        return None
    return load_checkpoint(config.checkpoint, name=config.name, max_seq=config.max_seq,
                           dequantize=not config.native_quant)


def model_weights(config: ModelConfig, dtype: DType | None = None,
                  on_tensor: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The weights ``config``'s model runs with: a preset's deterministic ones (:func:`make_weights`),
    or its checkpoint's (shared: never change them; ``on_tensor`` is called per tensor read):
    float32 tensors, and with ``config.native_quant`` the Q4_1 / Q8_0 ones as
    :class:`~amkspec.models.quant.QuantTensor`. Float tensors are converted to ``dtype`` when given."""
    found = checkpoint_of(config)
    if found is None:
        return make_weights(config, dtype)
    weights = found.read_weights(on_tensor)
    if dtype is None or dtype is DType.F32:
        return weights
    target = torch_dtype(dtype)
    return {k: v.to(target) if isinstance(v, torch.Tensor) else v for k, v in weights.items()}


def eager_weights(config: ModelConfig) -> dict[str, torch.Tensor]:
    """Every weight of ``config``'s model as float32 (a checkpoint's quantized tensors as their exact
    dequantization): what the eager model computes with."""
    found = checkpoint_of(config)
    return make_weights(config) if found is None else found.float_weights


def model_layout(config: ModelConfig) -> NativeQuant | None:
    """The native quantized formats ``config``'s program stores (:attr:`Checkpoint.layout`), or None."""
    found = checkpoint_of(config) if config.native_quant else None
    return None if found is None else found.layout


def model_tokenizer(config: ModelConfig) -> TokenizerRef:
    """The tokenizer of ``config``'s checkpoint; a preset has none."""
    found = checkpoint_of(config)
    if found is None:
        return TokenizerRef(None, f"model {config.name!r} has no tokenizer (give token ids)")
    return found.tokenizer
