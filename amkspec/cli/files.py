"""How every command reads its side files and writes its outputs (docs/guides/robustness.md).

Reading goes through :mod:`amkspec.ir.bounded` (size, depth and number limits, strict JSON);
writing through :mod:`amkspec.ir.atomic` (temp file, fsync, rename; never over an input).
Each failure is one error line naming the file, exit 2.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from tokenize import TokenError
from typing import TYPE_CHECKING, Any

import numpy as np

from amkspec.cli.base import fail
from amkspec.ir import AmkspecError
from amkspec.ir.atomic import atomic_path, refuse_overwrite, write_atomic
from amkspec.ir.bounded import load_json, read_input
from amkspec.ir.limits import MAX_DECOMPRESSED_BYTES, MAX_INPUT_BYTES

if TYPE_CHECKING:
    import torch


def _reason(exc: BaseException) -> str:
    if isinstance(exc, AmkspecError):
        path, reason = getattr(exc, "path", None), getattr(exc, "reason", None)
        return str(reason) if path == "(root)" and reason else str(exc)
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


def read_json_file(path: str, what: str = "") -> Any:
    """The parsed JSON of a side file (certificate, trace, config, inputs), within the limits;
    ``what`` ("a JSON config") names the kind of file in the error line."""
    try:
        return load_json(path)
    except OSError as exc:
        fail(f"{path}: cannot read{f' {what}' if what else ''}: {exc.strerror or exc}")
    except AmkspecError as exc:
        fail(f"{path}: {f'cannot read {what}: ' if what else ''}{_reason(exc)}")


def check_size(path: str) -> None:
    """Refuse a file larger than ``max_input_bytes`` before a library reads all of it."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        fail(f"{path}: {_reason(exc)}")
    cap = MAX_INPUT_BYTES.value()
    if size > cap:
        fail(f"{path}: the file is larger than {cap} bytes "
             f"(raise the limit with {MAX_INPUT_BYTES.env}=BYTES)")


def read_npz(path: str) -> dict[str, Any]:
    """Arrays of an ``.npz`` file (no pickles), refusing more than ``max_decompressed_bytes`` in all."""
    import numpy as np

    check_size(path)
    cap = MAX_DECOMPRESSED_BYTES.value()
    try:
        with zipfile.ZipFile(path) as zf:
            total = sum(info.file_size for info in zf.infolist())
        if total > cap:
            fail(f"{path}: the arrays are larger than {cap} bytes "
                 f"(raise the limit with {MAX_DECOMPRESSED_BYTES.env}=BYTES)")
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, MemoryError, KeyError, TokenError) as exc:
        fail(f"{path}: not a readable .npz file ({_reason(exc)})")  # TokenError: a damaged .npy header


def read_bytes_file(path: str) -> bytes:
    """A file's bytes within the limits (gunzipped when gzip)."""
    try:
        return read_input(path)
    except (AmkspecError, OSError) as exc:
        fail(f"{path}: {_reason(exc)}")


def refuse_inputs(output: str, inputs: Iterable[str | None]) -> None:
    """Exit 2 when ``output`` is one of ``inputs`` (a command never destroys its input)."""
    try:
        refuse_overwrite(output, inputs)
    except AmkspecError as exc:
        fail(str(exc))


@contextlib.contextmanager
def output_file(output: str, inputs: Iterable[str | None] = ()) -> Iterator[str]:
    """A temporary path to write ``output`` to; renamed over it only when the block succeeds."""
    refuse_inputs(output, inputs)
    try:
        with atomic_path(output) as tmp:
            yield tmp
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")


def write_output(output: str, data: str | bytes, inputs: Iterable[str | None] = ()) -> None:
    """Write ``data`` to ``output`` atomically, never over one of ``inputs``."""
    refuse_inputs(output, inputs)
    try:
        write_atomic(output, data)
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")


def save_npz(output: str, arrays: Mapping[str, Any], inputs: Iterable[str | None] = ()) -> None:
    """``np.savez`` to ``output`` atomically, never over one of ``inputs``."""
    import numpy as np

    with output_file(output, inputs) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **dict(arrays))


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


def to_numpy(t: torch.Tensor | np.ndarray) -> np.ndarray:
    import torch

    if isinstance(t, np.ndarray):
        return t
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def read_config_document(path: str) -> Any:
    """The config document of a file, as :func:`amkspec.lower.knobs.config_document` finds it (an
    ``amkspec propose`` document gives its ``schedule_config``); any JSON value, judged by the knob
    checks, so a malformed one is a ``valid: false`` verdict. Exit 2 only if the file cannot be
    read or is not JSON."""
    from amkspec.lower.knobs import NULL_DOCUMENT, config_document

    doc = config_document(read_json_file(path, "a JSON config"))
    return NULL_DOCUMENT if doc is None else doc
