"""The canonical JSON text of spec §6: exactly ``json.dumps(doc, indent=2)``, written faster.

The standard library's indented encoder is pure Python and builds its output from many small
generator steps; :func:`canonical_json` writes the same bytes with one recursive pass over the
document (strings escaped by the same C routine the standard library uses). Anything outside the
plain JSON types (a non-string key, a subclass of ``float``, an unknown object, a reference
cycle) is handed to ``json.dumps`` itself, so the result, or the error, is always the standard
library's.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

_INDENT = "  "


class _NotPlain(Exception):
    """The document holds something only ``json.dumps`` knows how to write (or reject)."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value: Any, pad: str, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(_quote(value))
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is dict:
        _encode_object(value, pad, out)
    elif kind is list or kind is tuple:
        _encode_array(value, pad, out)
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is float:
        out.append(_float(value))
    else:
        raise _NotPlain


def _encode_object(value: dict[Any, Any], pad: str, out: list[str]) -> None:
    if not value:
        out.append("{}")
        return
    inner = pad + _INDENT
    sep = "{\n" + inner
    for key, item in value.items():
        if type(key) is not str:
            raise _NotPlain
        out.append(sep)
        out.append(_quote(key))
        out.append(": ")
        _encode(item, inner, out)
        sep = ",\n" + inner
    out.append("\n" + pad + "}")


def _encode_array(value: list[Any] | tuple[Any, ...], pad: str, out: list[str]) -> None:
    if not value:
        out.append("[]")
        return
    inner = pad + _INDENT
    sep = "[\n" + inner
    for item in value:
        out.append(sep)
        _encode(item, inner, out)
        sep = ",\n" + inner
    out.append("\n" + pad + "]")


def canonical_json(doc: Any) -> str:
    """``json.dumps(doc, indent=2)``, byte for byte (and raising what it raises) (spec §6)."""
    out: list[str] = []
    try:
        _encode(doc, "", out)
    except (_NotPlain, RecursionError):
        return json.dumps(doc, indent=2)
    return "".join(out)
