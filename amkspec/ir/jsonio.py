"""The on-disk JSON format (spec §6), through one cattrs converter.

* Enums are written by name; int-keyed maps (``sm_assignment``, ``buffer_to_page``)
  have string keys on disk.
* Keys are written in the canonical order (the record's field order), followed
  by any unknown keys a newer writer added, which are kept on load.
* Text is ``json.dumps(..., indent=2)``: a file written by amkspec, or by the
  reference implementation, round-trips byte for byte.
* Anything that cannot be represented raises :class:`FormatError` naming the
  JSON path; a major version mismatch raises :class:`VersionError`.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from amkspec.ir.atomic import write_atomic
from amkspec.ir.bounded import parse_json, read_input
from amkspec.ir.canonical import canonical_json
from amkspec.ir.enums import ABI_VERSION, IR_VERSION, BufferKind, DType, InstructionKind, MemSpace
from amkspec.ir.errors import FormatError, PathPart, VersionError, VersionWarning, format_path
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.jsonio_fast import fast_loads
from amkspec.ir.limits import MAX_INT_DIGITS, MAX_SHAPE_DIMS
from amkspec.ir.model import (
    Buffer,
    Counter,
    MegakernelProgram,
    Page,
    PageAllocation,
    ScheduleConfig,
    Task,
    Wait,
)
from amkspec.ir.targets import GpuTarget

T = TypeVar("T")

RECORDS: tuple[type, ...] = (
    Wait, Buffer, Counter, Task, Page, PageAllocation, ScheduleConfig, GpuTarget, MegakernelProgram,
)
"""Every record of the format, leaves first (hooks are generated in this order)."""


REQUIRED_TOP_LEVEL = ("buffers", "counters", "tasks")
"""Top-level keys a program document must have (the rest default as in spec §6)."""


class _Bad(Exception):
    """A located structuring failure: ``parts`` is the path below the hook that raised."""

    def __init__(self, parts: list[PathPart], reason: str) -> None:
        super().__init__(reason)
        self.parts = parts
        self.reason = reason


def _show(value: Any) -> str:
    text = json.dumps(value) if _jsonable(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _expected(what: str, got: Any) -> _Bad:
    return _Bad([], f"expected {what}, got {_show(got)}")


def _locate(exc: BaseException) -> tuple[list[PathPart], str]:
    """Path and reason of the first failure inside a (nested) structuring error."""
    if isinstance(exc, _Bad):
        return exc.parts, exc.reason
    if isinstance(exc, ClassValidationError):
        with_notes, others = exc.group_exceptions()
        if with_notes:
            sub, note = with_notes[0]
            if isinstance(sub, KeyError):
                return [], f"missing required field '{note.name}'"
            parts, reason = _locate(sub)
            return [note.name, *parts], reason
        return _locate(others[0])
    if isinstance(exc, IterableValidationError):
        with_notes_i, others_i = exc.group_exceptions()
        if with_notes_i:
            sub, inote = with_notes_i[0]
            parts, reason = _locate(sub)
            return [inote.index, *parts], reason
        return _locate(others_i[0])
    return [], f"{type(exc).__name__}: {exc}"


def _nest(part: PathPart, exc: BaseException) -> _Bad:
    parts, reason = _locate(exc)
    return _Bad([part, *parts], reason)


# -- scalar hooks: JSON types are checked strictly (a bool is not an integer) ------------------

_INT_BOUND = 10**MAX_INT_DIGITS.default
"""Integer fields hold at most ``max_int_digits`` digits: byte counts stay printable."""


def _s_int(value: Any, _: Any) -> int:
    if type(value) is not int:
        raise _expected("an integer", value)
    if not -_INT_BOUND < value < _INT_BOUND:
        raise _Bad([], f"an integer has more than {MAX_INT_DIGITS.default} digits")
    return value


def _s_float(value: Any, _: Any) -> float:
    if type(value) not in (int, float):
        raise _expected("a number", value)
    return float(value)


def _s_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise _expected("a string", value)
    return value


def _s_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise _expected("true or false", value)
    return value


def _s_any(value: Any, _: Any) -> Any:
    return value


def _enum_hook(cls: type[enum.Enum]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, str):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise _expected(f"{article} {cls.__name__} name", value)
        try:
            return cls[value]
        except KeyError:
            names = ", ".join(cls.__members__)
            raise _Bad([], f"unknown {cls.__name__} {_show(value)} (one of {names})") from None

    return hook


INT_KEY = re.compile(r"-?[0-9]+")
"""An int-keyed map's key on disk: a plain decimal integer, as ``str(int)`` writes it."""


def _int_key(key: str) -> int:
    if not INT_KEY.fullmatch(key):
        raise _Bad([key], "expected an integer key")
    if len(key.lstrip("-")) > MAX_INT_DIGITS.value():
        raise _Bad([key], f"an integer key has more than {MAX_INT_DIGITS.value()} digits")
    return int(key)


def _is_list(t: Any) -> bool:
    return get_origin(t) in (list, tuple)


def _is_dict(t: Any) -> bool:
    return get_origin(t) is dict


def _list_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    elem = get_args(t)[0]
    container = get_origin(t)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, list):
            raise _expected("an array", value)
        items = []
        for i, item in enumerate(value):
            try:
                items.append(conv.structure(item, elem))
            except Exception as exc:  # noqa: BLE001 - re-raised with its path
                raise _nest(i, exc) from None
        return container(items)

    return hook


def _dict_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    key_t, val_t = get_args(t)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        out = {}
        for key, item in value.items():
            k = _int_key(key) if key_t is int else key
            if key_t is int and k in out:
                raise _Bad([key], f"key {json.dumps(key)} repeats key {json.dumps(str(k))} (both mean {k})")
            try:
                out[k] = item if val_t is Any else conv.structure(item, val_t)
            except Exception as exc:  # noqa: BLE001 - re-raised with its path
                raise _nest(key, exc) from None
        return out

    return hook


def _unstructure_map(conv: cattrs.Converter, data: dict[Any, Any]) -> dict[str, Any]:
    """Int keys become strings on disk (spec §6); values unstructure recursively."""
    return {
        (str(k) if type(k) is int else k): conv.unstructure(v) for k, v in data.items()
    }


def _sm_assignment_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    as_map = _dict_hook(conv, dict[int, int])

    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            return as_map(value, None)
        raise _expected("a string or an object of task id to SM", value)

    return hook


def _known(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(cls) if f.name != "extra")


def _record_hooks(conv: cattrs.Converter, cls: type) -> None:
    known = frozenset(_known(cls))
    base_s: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, conv, extra=override(omit=True))
    base_u: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, conv, extra=override(omit=True))

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        obj = base_s(value, cls)
        obj.extra = {k: v for k, v in value.items() if k not in known}
        if cls is Buffer and len(obj.shape) > MAX_SHAPE_DIMS.default:
            # its byte size (a product of up to 40-digit dims) must stay printable (spec §1.3)
            raise _Bad(["shape"], f"more than {MAX_SHAPE_DIMS.default} dims")
        return obj

    def unstructure(obj: Any) -> dict[str, Any]:
        data = base_u(obj)
        data.update(obj.extra)
        return data

    conv.register_structure_hook(cls, structure)
    conv.register_unstructure_hook(cls, unstructure)


def make_converter() -> cattrs.Converter:
    """The one converter of the JSON format (spec §6)."""
    conv = cattrs.Converter(detailed_validation=True)
    conv.register_structure_hook(int, _s_int)
    conv.register_structure_hook(float, _s_float)
    conv.register_structure_hook(str, _s_str)
    conv.register_structure_hook(bool, _s_bool)
    conv.register_structure_hook(Any, _s_any)
    enums: tuple[type[enum.Enum], ...] = (DType, MemSpace, BufferKind, InstructionKind)
    for enum_cls in enums:
        conv.register_structure_hook(enum_cls, _enum_hook(enum_cls))
        conv.register_unstructure_hook(enum_cls, lambda e: e.name)
    conv.register_structure_hook_factory(_is_list, lambda t: _list_hook(conv, t))
    conv.register_structure_hook_factory(_is_dict, lambda t: _dict_hook(conv, t))
    conv.register_unstructure_hook(tuple, list)
    conv.register_structure_hook(str | dict[int, int], _sm_assignment_hook(conv))
    conv.register_unstructure_hook_func(
        lambda t: t is dict or _is_dict(t), lambda d: _unstructure_map(conv, d)
    )
    for record in RECORDS:
        _record_hooks(conv, record)
    return conv


CONVERTER = make_converter()


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def _check_version(doc: dict[str, Any], key: str, ours: str) -> None:
    if key not in doc:
        return
    theirs = doc[key]
    if not isinstance(theirs, str):
        raise FormatError(key, f"expected a string, got {_show(theirs)}")
    if _major(theirs) != _major(ours):
        raise VersionError(f"{key} {theirs!r} has another major version than ours ({ours!r})")
    if _version_key(key, theirs) > _version_key(key, ours):
        warnings.warn(
            f"{key} {theirs!r} is newer than ours ({ours!r}); unknown fields are kept",
            VersionWarning,
            stacklevel=3,
        )


def _version_key(key: str, version: str) -> tuple[int, ...]:
    """The dotted version as integers: each component's ASCII digits (none counts as 0); a
    component of more than ``max_int_digits`` digits is a :class:`FormatError` at ``key``."""
    parts = []
    for piece in version.split("."):
        digits = "".join(re.findall(r"[0-9]", piece))
        if len(digits) > MAX_INT_DIGITS.value():
            raise FormatError(key, f"a version component has more than {MAX_INT_DIGITS.value()} digits")
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def from_dict(doc: Any) -> MegakernelProgram:
    """Structure a parsed JSON document into a program (spec §6)."""
    if not isinstance(doc, dict):
        raise FormatError("(root)", f"expected an object, got {_show(doc)}")
    _check_version(doc, "ir_version", IR_VERSION)
    _check_version(doc, "abi_version", ABI_VERSION)
    for key in REQUIRED_TOP_LEVEL:
        if key not in doc:
            raise FormatError("(root)", f"missing required field '{key}'")
    try:
        return CONVERTER.structure(doc, MegakernelProgram)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a located FormatError
        parts, reason = _locate(exc)
        raise FormatError(format_path(parts), reason) from None


def to_dict(prog: MegakernelProgram) -> dict[str, Any]:
    """Unstructure a program into JSON-ready data in canonical key order (spec §6)."""
    data: dict[str, Any] = CONVERTER.unstructure(prog)
    return data


def loads(text: str | bytes) -> MegakernelProgram:
    """Parse JSON text into a program; FormatError/VersionError on bad input (spec §6).

    The text is parsed strictly and within limits (:func:`amkspec.ir.bounded.parse_json`):
    a repeated key, deep nesting or an over-long integer is a FormatError. A plainly fine
    text takes the fast path (:func:`amkspec.ir.jsonio_fast.fast_loads`), which builds the very
    same program; anything else is read, and reported, by the strict reader.
    """
    with gc_paused():
        prog = fast_loads(text)
        if prog is not None:
            return prog
        return from_dict(parse_json(text, nonfinite=True))


def dumps(prog: MegakernelProgram) -> str:
    """Canonical JSON text of a program (indent 2, no trailing newline) (spec §6)."""
    with gc_paused():
        try:
            return canonical_json(to_dict(prog))
        except (TypeError, ValueError) as exc:
            raise FormatError("(root)", f"not representable as JSON: {exc}") from None
        except RecursionError:
            raise FormatError("(root)", "not representable as JSON: nested too deeply") from None



def program_sha256(prog: MegakernelProgram) -> str:
    """SHA-256 of the program's canonical JSON (spec §6): binds a certificate or a cached
    result to one program."""
    return hashlib.sha256(dumps(prog).encode()).hexdigest()

def load(path: str | os.PathLike[str]) -> MegakernelProgram:
    """Read a program from a ``.json`` (or gzip-compressed ``.json.gz``) file (spec §6)."""
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise FormatError("(root)", f"cannot read the file: {exc.strerror or exc}") from None
    return loads(data)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A file's bytes, gunzipped when they start with the gzip magic number (spec §6), within
    the size limits of :mod:`amkspec.ir.limits`."""
    return read_input(path)


def dump(prog: MegakernelProgram, path: str | os.PathLike[str]) -> None:
    """Write a program's canonical JSON (plus a final newline) to ``path`` atomically (spec §6)."""
    write_atomic(path, dumps(prog) + "\n")
