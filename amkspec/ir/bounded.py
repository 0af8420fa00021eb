"""Reading untrusted files within the limits of :mod:`amkspec.ir.limits` (spec §6 FormatError).

Every file amkspec reads (programs, certificates, traces, weights, configs, inputs) comes
through here:

* :func:`read_input` reads at most ``max_input_bytes`` (a longer file or an endless stream
  is refused, not read) and gunzips gzip data to at most ``max_decompressed_bytes``;
* :func:`parse_json` parses strict JSON: objects with a repeated key, nesting deeper than
  ``max_json_depth``, integers longer than Python's ``int`` limit (4300 digits), numbers that
  overflow to infinity, ``NaN``/``Infinity``, lone UTF-16 surrogates and bytes that are not
  UTF-8 (UTF-16 or UTF-32 text; a UTF-8 byte order mark is skipped) are all refused.
  (A program's integer fields are further bounded by ``max_int_digits`` when they are
  structured, :mod:`amkspec.ir.jsonio`.)

Every refusal is a :class:`FormatError` naming the JSON path where there is one.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from amkspec.ir.errors import FormatError, format_path
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.limits import MAX_DECOMPRESSED_BYTES, MAX_INPUT_BYTES, MAX_JSON_DEPTH

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def _too_big(what: str, cap: int, env: str | None) -> FormatError:
    hint = f" (raise the limit with {env}=BYTES)" if env else ""
    return FormatError("(root)", f"{what} is larger than {cap} bytes{hint}")


def read_limited(fh: io.BufferedIOBase | io.RawIOBase | Any, cap: int) -> bytes | None:
    """Up to ``cap`` bytes of ``fh``; None when there are more (the rest is never read)."""
    chunks: list[bytes] = []
    total = 0
    while total <= cap:
        chunk = fh.read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    return None


def read_input(path: str | os.PathLike[str]) -> bytes:
    """A file's bytes within ``max_input_bytes``, gunzipped (within ``max_decompressed_bytes``)
    when they start with the gzip magic number. Raises OSError when the file cannot be opened."""
    cap = MAX_INPUT_BYTES.value()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > cap:
            raise _too_big("the file", cap, MAX_INPUT_BYTES.env)
        data = read_limited(fh, cap)
    if data is None:
        raise _too_big("the input", cap, MAX_INPUT_BYTES.env)
    return gunzip(data) if data[:2] == GZIP_MAGIC else data


def gunzip(data: bytes) -> bytes:
    """Decompress gzip ``data`` to at most ``max_decompressed_bytes`` (spec §6 ``.json.gz``)."""
    import gzip
    import zlib

    cap = MAX_DECOMPRESSED_BYTES.value()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            out = read_limited(gz, cap)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError("(root)", f"corrupt gzip data: {exc}") from None
    if out is None:
        raise _too_big("the decompressed data", cap, MAX_DECOMPRESSED_BYTES.env)
    return out


# -- strict JSON ---------------------------------------------------------------------------------


class _Duplicate(Exception):
    """An object repeats a key (located afterwards by :func:`_find_duplicate`)."""


class _Refused(Exception):
    """A literal the strict parser refuses (too many digits, not finite)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate
    return obj


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of the range of a double")
    return value


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON value")


_FINITE: dict[str, Any] = {"parse_float": _float, "parse_constant": _constant}

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")
"""A surrogate escape (or, in text handed over as ``str``, a surrogate character): only then is
every string checked. Two searches: one with an alternation is ten times slower."""


def parse_json(data: str | bytes, *, nonfinite: bool = False) -> Any:
    """Strict, bounded ``json.loads`` (see the module doc); FormatError on any refusal.

    ``nonfinite=True`` accepts ``NaN``, ``Infinity`` and numbers that overflow a double, as
    Python's ``json`` (and so the reference implementation) writes them: a program may hold
    such a param, which ``validate()`` then reports (spec §3.1).
    """
    if isinstance(data, bytes):
        encoding = json.detect_encoding(data)
        if encoding not in ("utf-8", "utf-8-sig"):
            raise FormatError("(root)", f"not JSON: {encoding.upper()} text, not UTF-8")
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            reason = f"not JSON: not {exc.encoding} text ({exc.reason} at byte {exc.start})"
            raise FormatError("(root)", reason) from None
    else:
        text = data
    try:
        with _depth_capped(MAX_JSON_DEPTH.default):
            doc = json.loads(text, object_pairs_hook=_pairs, **({} if nonfinite else _FINITE))
    except json.JSONDecodeError as exc:
        raise FormatError("(root)", f"not JSON: {exc}") from None
    except RecursionError:
        raise FormatError("(root)", f"not JSON: nested deeper than {MAX_JSON_DEPTH.default} levels") from None
    except _Refused as exc:
        raise FormatError("(root)", f"not JSON: {exc}") from None
    except _Duplicate:
        raise _find_duplicate(text, nonfinite) from None
    except ValueError as exc:  # Python's own cap on int() of a long digit string
        raise FormatError("(root)", f"not JSON: {str(exc).split(';')[0]}") from None
    if _SURROGATE_ESCAPE.search(text) or (not text.isascii() and _SURROGATE_CHAR.search(text)):
        _check_surrogates(doc)
    return doc


class _depth_capped:
    """While active, the C JSON scanner raises RecursionError past about ``depth`` nested containers.

    The scanner counts each nested array/object against the interpreter's recursion limit, so
    the limit is set just high enough for a probe document ``depth`` levels deep (objects, with a
    number inside: the costliest innermost level) to parse here, and restored after. A document
    ``depth`` deep therefore always parses; one nested more than 3 levels deeper never does.

    The cyclic garbage collector is paused meanwhile: a collection there would run other
    objects' finalisers with no stack to spare, and they would fail.
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.saved = 0
        self.paused = gc_paused()

    def __enter__(self) -> None:
        self.paused.__enter__()
        self.saved = sys.getrecursionlimit()
        probe = '{"a":' * self.depth + "1.5" + "}" * self.depth
        limit = _stack_depth() + self.depth
        while limit < self.saved + self.depth * 4:
            sys.setrecursionlimit(limit)
            try:
                json.loads(probe, object_pairs_hook=_pairs, parse_float=_float)
                return
            except RecursionError:
                limit += 1
        sys.setrecursionlimit(self.saved)

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self.saved)
        self.paused.__exit__(None, None, None)


def _stack_depth() -> int:
    frame = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def _find_duplicate(text: str, nonfinite: bool) -> FormatError:
    """The FormatError naming the first object (in document order) that repeats a key."""
    try:
        with _depth_capped(MAX_JSON_DEPTH.default):
            strict = {} if nonfinite else _FINITE
            doc = json.loads(text, object_pairs_hook=_PairList, **strict)
    except (json.JSONDecodeError, _Refused) as exc:  # broken further on: that is the first thing to fix
        return FormatError("(root)", f"not JSON: {exc}")
    except ValueError as exc:
        return FormatError("(root)", f"not JSON: {str(exc).split(';')[0]}")
    except RecursionError:
        return FormatError("(root)", f"not JSON: nested deeper than {MAX_JSON_DEPTH.default} levels")
    for path, value in _walk(doc, []):
        if isinstance(value, _PairList):
            seen: set[str] = set()
            for key, _ in value:
                if key in seen:
                    return FormatError(format_path(path), f"duplicate key {json.dumps(key)}")
                seen.add(key)
    return FormatError("(root)", "duplicate key")


class _PairList(list):
    """An object's ``(key, value)`` pairs, kept in order, for locating a duplicate key."""


def _walk(value: Any, path: list[str | int]) -> Iterator[tuple[list[str | int], Any]]:
    """Every value of a parsed document with its path, parents before children."""
    stack: list[tuple[list[str | int], Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        yield here, item
        if isinstance(item, _PairList):
            stack.extend(([*here, k], v) for k, v in reversed(item))
        elif isinstance(item, dict):
            stack.extend(([*here, k], v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(([*here, i], v) for i, v in reversed(list(enumerate(item))))


def _check_surrogates(doc: Any) -> None:
    """Refuse a lone UTF-16 surrogate (``"\\ud800"``) in any key or string: it is no text."""
    for path, value in _walk(doc, []):
        keys = [path[-1]] if path and isinstance(path[-1], str) else []
        for s in (*keys, value):
            if isinstance(s, str):
                try:
                    s.encode("utf-8")
                except UnicodeEncodeError:
                    raise FormatError(format_path(path), "a string holds a lone UTF-16 surrogate") from None


def load_json(path: str | os.PathLike[str], *, nonfinite: bool = False) -> Any:
    """:func:`read_input` then :func:`parse_json`; OSError when the file cannot be opened."""
    return parse_json(read_input(path), nonfinite=nonfinite)
