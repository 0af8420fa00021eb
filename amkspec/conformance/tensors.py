"""Tensors on the wire and in case files (spec §9.2, §9.3).

A tensor is ``{"dtype": <IR dtype name>, "shape": [...], "data": [...]}`` (row-major values) or
``{"dtype", "shape", "npy": <path>}``. Values are in storage layout: a packed I4 buffer is given as
its ``uint8`` bytes with a halved last dim (spec §1.3). F16, BF16 and the F8 types are written as
the exact decimal of each value, and ``.npy`` files store them as ``float32``, since numpy lacks
``bfloat16``; every such value is exactly representable in ``float32``.
"""

from __future__ import annotations

from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np

NUMPY_DTYPE: dict[str, Any] = {
    "F32": np.float32,
    "F16": np.float16,
    "BF16": np.float32,
    "F8E4M3": np.float32,
    "F8E5M2": np.float32,
    "I32": np.int32,
    "I8": np.int8,
    "I4": np.uint8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
"""The numpy type a tensor of each IR dtype is held in."""

FLOAT_DTYPES = frozenset({"F32", "F16", "BF16", "F8E4M3", "F8E5M2"})


class TensorError(ValueError):
    """A tensor object is malformed (unknown dtype, data not matching its shape, unreadable file)."""


MAX_ELEMENTS = 2**31
"""The most elements a tensor object may describe (a larger ``shape`` is malformed, not an overflow)."""


def decode(obj: Any, base: Path | None = None) -> np.ndarray:
    """The numpy array a tensor object describes; a relative ``npy`` path is taken from ``base``.

    Raises :class:`TensorError` for anything malformed, including a value out of its dtype's range
    (an I8 value of 254) and a dimension that is not a small non-negative int."""
    if (
        not isinstance(obj, dict)
        or obj.get("dtype") not in NUMPY_DTYPE
        or not isinstance(obj.get("shape"), list)
    ):
        raise TensorError(f"not a tensor object: {str(obj)[:80]}")
    np_type = NUMPY_DTYPE[obj["dtype"]]
    shape = _shape(obj["shape"])
    if "npy" in obj:
        path = Path(obj["npy"]) if base is None else base / obj["npy"]
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError, TokenError) as exc:  # TokenError: a damaged header
            raise TensorError(f"cannot read {path}: {exc}") from exc
        array = array.astype(np_type, copy=False)
    else:
        try:
            array = np.asarray(obj.get("data"), dtype=np_type)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise TensorError(f"data not of dtype {obj['dtype']}: {exc}") from None
    if array.size != int(np.prod(shape, dtype=np.int64)):
        raise TensorError(f"{array.size} values for shape {list(shape)}")
    return array.reshape(shape)


def _shape(dims: list[Any]) -> tuple[int, ...]:
    if not all(type(d) is int and d >= 0 for d in dims):
        raise TensorError(f"shape {str(dims)[:80]} is not a list of non-negative ints")
    total = 1
    for d in dims:
        total *= d
        if total > MAX_ELEMENTS:
            raise TensorError(f"shape {str(dims)[:80]} has more than {MAX_ELEMENTS} elements")
    return tuple(dims)


def encode(array: Any, dtype: str) -> dict[str, Any]:
    """A tensor object with inline data (``array``: numpy array or torch tensor) of IR ``dtype``."""
    if hasattr(array, "detach"):
        array = array.detach().cpu()
        array = array.float().numpy() if dtype in FLOAT_DTYPES else array.numpy()
    values = np.asarray(array)
    if dtype in FLOAT_DTYPES:
        data: list[Any] = values.astype(np.float64).reshape(-1).tolist()
    elif dtype == "BOOL":
        data = values.astype(bool).reshape(-1).tolist()
    else:
        data = values.astype(np.int64).reshape(-1).tolist()
    return {"dtype": dtype, "shape": list(values.shape), "data": data}


def absolute(obj: dict[str, Any], base: Path) -> dict[str, Any]:
    """``obj`` with a relative ``npy`` path made absolute against ``base`` (for the wire)."""
    if "npy" in obj:
        return {**obj, "npy": str((base / obj["npy"]).resolve())}
    return obj
