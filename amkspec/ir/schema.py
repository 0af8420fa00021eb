"""JSON Schema (Draft 2020-12) of the on-disk format, generated from the attrs model (spec §6).

Nothing here is written by hand: every record of :data:`amkspec.ir.jsonio.RECORDS` becomes a
``$defs`` entry by walking its ``attrs`` fields and their type hints, so the schema cannot
drift from what :func:`amkspec.ir.load` accepts. The mapping is:

* records → objects with ``additionalProperties: true`` (unknown fields are preserved, spec §6)
  and ``required`` = the fields without a default;
* enums → strings with an ``enum`` of the member names;
* int-keyed maps (``buffer_to_page``, an explicit ``sm_assignment``) → objects whose property
  names match ``^-?[0-9]+$``;
* ``X | None`` → ``anyOf`` with ``null``; ``list``/``tuple`` → arrays; ``Any`` → any value.

The version fields additionally carry a pattern for the supported major version, since a major
mismatch is a :class:`~amkspec.ir.errors.VersionError` on load.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from typing import Any, Union, get_args, get_origin

import attrs

from amkspec.ir.enums import ABI_VERSION, IR_VERSION
from amkspec.ir.jsonio import INT_KEY, RECORDS, REQUIRED_TOP_LEVEL
from amkspec.ir.model import MegakernelProgram

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"urn:amkspec:schema:ir:{IR_VERSION}"
INT_KEY_PATTERN = f"^{INT_KEY.pattern}$"
"""Property names of int-keyed maps: a decimal integer, as the writer prints it."""

Schema = dict[str, Any]


def _major_pattern(version: str) -> str:
    major = re.escape(version.split(".", 1)[0])
    return f"^{major}(\\..*)?$"


_FIELD_PATTERNS: dict[tuple[type, str], str] = {
    (MegakernelProgram, "ir_version"): _major_pattern(IR_VERSION),
    (MegakernelProgram, "abi_version"): _major_pattern(ABI_VERSION),
}
"""Field-level patterns the type hints cannot carry: the accepted major versions."""


def _ref(name: str) -> Schema:
    return {"$ref": f"#/$defs/{name}"}


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def type_schema(tp: Any) -> Schema:
    """The schema of one type hint of the model."""
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _ref(tp.__name__)
    if isinstance(tp, type) and attrs.has(tp):
        return _ref(tp.__name__)
    if _is_union(tp):
        return {"anyOf": [type_schema(arm) for arm in get_args(tp)]}
    origin, args = get_origin(tp), get_args(tp)
    if origin in (list, tuple):
        return {"type": "array", "items": type_schema(args[0])}
    if origin is dict:
        out: Schema = {"type": "object", "additionalProperties": type_schema(args[1])}
        if args[0] is int:
            out["propertyNames"] = {"pattern": INT_KEY_PATTERN}
        return out
    raise TypeError(f"no JSON Schema mapping for {tp!r}")


def _enums_of(tp: Any) -> set[type[enum.Enum]]:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {tp}
    found: set[type[enum.Enum]] = set()
    for arg in get_args(tp):
        found |= _enums_of(arg)
    return found


def _default(field: attrs.Attribute[Any]) -> tuple[bool, Any]:
    """(has a JSON default, the default as JSON data)."""
    default = field.default
    if default is attrs.NOTHING:
        return False, None
    factory = getattr(default, "factory", None)  # an attrs.Factory
    if factory is not None:
        if getattr(default, "takes_self", False):
            return False, None
        default = factory()
    if isinstance(default, enum.Enum):
        return True, default.name
    if isinstance(default, tuple):
        return True, list(default)
    return True, default


def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def record_schema(cls: type) -> Schema:
    """The ``$defs`` entry of one attrs record."""
    hints = typing.get_type_hints(cls)
    props: dict[str, Schema] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        if field.name == "extra":
            continue
        prop = type_schema(hints[field.name])
        pattern = _FIELD_PATTERNS.get((cls, field.name))
        if pattern is not None:
            prop = {**prop, "pattern": pattern}
        has_default, value = _default(field)
        if has_default:
            prop = {**prop, "default": value}
        else:
            required.append(field.name)
        props[field.name] = prop
    if cls is MegakernelProgram:
        required = [*required, *REQUIRED_TOP_LEVEL]
    return {
        "type": "object",
        "title": cls.__name__,
        "description": _summary(cls),
        "properties": props,
        "required": required,
        "additionalProperties": True,
    }


def enum_schema(cls: type[enum.Enum]) -> Schema:
    """An enum's ``$defs`` entry: its member names (codes are not part of the JSON)."""
    return {
        "type": "string",
        "title": cls.__name__,
        "description": _summary(cls),
        "enum": list(cls.__members__),
    }


def program_schema() -> Schema:
    """The JSON Schema of a program document (spec §6), generated from the model."""
    defs: dict[str, Schema] = {}
    enums: set[type[enum.Enum]] = set()
    for cls in RECORDS:
        defs[cls.__name__] = record_schema(cls)
        for hint in typing.get_type_hints(cls).values():
            enums |= _enums_of(hint)
    for enum_cls in sorted(enums, key=lambda e: e.__name__):
        defs[enum_cls.__name__] = enum_schema(enum_cls)
    root = defs.pop(MegakernelProgram.__name__)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        **root,
        "title": "AMK megakernel program",
        "description": (
            f"A megakernel program in the AMK IR on-disk format, ir_version {IR_VERSION}, "
            f"abi_version {ABI_VERSION} (spec §6). Generated from the amkspec data model; "
            "unknown fields are allowed and preserved."
        ),
        "$defs": dict(sorted(defs.items())),
    }
