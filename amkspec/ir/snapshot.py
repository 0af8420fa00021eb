"""``snapshot(program)``: an independent copy of a program, for a VM that validates once and runs
many launches (spec §2.4: no policy and no input can make a VM run a program the validator rejects).

The records are mutable attrs classes holding plain lists and dicts. A VM that kept the caller's
program would validate it once and then read it again at every launch, so a change the caller made
in between (a wait dropped, an operand redirected, a counter's ``init`` raised) would run without
ever being validated. A VM therefore takes a snapshot *before* it validates, and validates and
runs only that.

The copy is exact: every record of the format, list and dict is a new object holding the same
values, in the same types, with nothing converted or checked (a broken program stays broken in
exactly the same way, so the snapshot gets the same diagnostics). Values that cannot change
(numbers, strings, enum members, ``None``, tuples of those) are shared; dict keys are shared
(they are hashable); nested lists and dicts of any depth, cycles included, are copied as
:func:`copy.deepcopy` would; any other object is deep-copied (:func:`_other`).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from amkspec.ir.errors import FormatError
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.jsonio import RECORDS

T = TypeVar("T")

_SHARED: set[type] = {int, float, complex, str, bytes, bool, type(None)}
"""Types whose values cannot change: a snapshot shares them (enum classes join as they are met)."""

_NESTING = frozenset({list, dict})
"""Containers that may nest to any depth, or in a cycle: copied by :func:`_tree`."""


def snapshot(record: T) -> T:
    """An exact copy of ``record`` (a program, or any of its records) that shares nothing that
    can change with it (see the module doc). A cycle through records is copied as
    :func:`copy.deepcopy` copies it; records nested deeper than the interpreter's stack (only
    ever built in memory: the JSON format bounds depth) are a :class:`FormatError`."""
    with gc_paused():
        try:
            return _copy(record)
        except RecursionError:  # a cycle through records, or records nested past the stack
            pass
        try:
            return copy.deepcopy(record)
        except RecursionError:
            raise FormatError("$", "records nest too deep to copy") from None


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is list:
        kinds = set(map(type, value))
        if kinds <= _SHARED:
            return value[:]
        return [_copy(v) for v in value] if _NESTING.isdisjoint(kinds) else _tree(value)
    if kind is dict:
        kinds = set(map(type, value.values()))
        if kinds <= _SHARED:
            return value.copy()
        return {k: _copy(v) for k, v in value.items()} if _NESTING.isdisjoint(kinds) else _tree(value)
    copier = _COPIERS.get(kind)
    if copier is not None:
        return copier(value)
    if isinstance(value, enum.Enum):
        _SHARED.add(kind)
        return value
    if kind is tuple and _SHARED.issuperset(map(type, value)):
        return value
    return _other(value)


def _tree(root: list[Any] | dict[Any, Any]) -> Any:
    """A copy of a nested list or dict (a free-form value: ``params``, ``meta``, ``extra``), walked
    with a stack, so any depth copies; a container met twice (shared, or in a cycle) is copied
    once and met twice in the copy, as :func:`copy.deepcopy` does."""
    made: dict[int, Any] = {}
    todo: list[tuple[Any, Any]] = []

    def shell(value: Any) -> Any:
        kind = type(value)
        if kind in _SHARED:
            return value
        if kind is not list and kind is not dict:
            return _copy(value)
        new = made.get(id(value))
        if new is None:
            new = made[id(value)] = [] if kind is list else {}
            todo.append((value, new))
        return new

    top = shell(root)
    while todo:
        value, new = todo.pop()
        if type(value) is list:
            new.extend([shell(v) for v in value])
        else:
            new.update([(k, shell(v)) for k, v in value.items()])
    return top


def _other(value: Any) -> Any:
    """Any other object, deep-copied; one :func:`copy.deepcopy` cannot copy is shared. Neither
    ``validate()`` nor a VM reads such an object: every value they read is a number, a string,
    an enum member, a list, a dict or a record."""
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - an object that refuses to be copied is kept as it is
        return value


_FIELD = """    x = v.{name}
    t = type(x)
    if t in S: y = x
    elif t is list and S.issuperset(map(type, x)): y = x[:]
    elif t is dict and S.issuperset(map(type, x.values())): y = x.copy()
    else: y = c(x)
"""
"""How a generated copier copies one field: :func:`_copy` with its commonest cases inline."""


def _compile(kind: type) -> Callable[[Any], Any]:
    """The copier of a record class of the format: a new instance with a copy of each field, stored
    directly (no ``__init__``, converter or ``on_setattr`` hook runs, so the copy holds exactly
    the values the original holds). Generated from the class's attrs fields; a record with an
    unset slot takes :func:`_by_field`, which leaves that slot unset."""
    names = tuple(a.name for a in attrs.fields(kind))
    plain = kind.__setattr__ is object.__setattr__  # else store past the attrs-made hooks
    lines = ["def copy(v):", "    n = new(K)"]
    for name in names:
        lines += [_FIELD.format(name=name), f"    n.{name} = y" if plain else f"    put(n, {name!r}, y)"]
    lines.append("    return n")
    env: dict[str, Any] = {"new": object.__new__, "put": object.__setattr__, "K": kind, "S": _SHARED}
    env["c"] = _copy
    exec("\n".join(lines), env)  # generated from the class's attrs field names only
    fast: Callable[[Any], Any] = env["copy"]

    def copier(value: Any) -> Any:
        try:
            return fast(value)
        except AttributeError:
            return _by_field(value, kind, names)

    return copier


def _by_field(value: Any, kind: type, names: tuple[str, ...]) -> Any:
    new: Any = object.__new__(kind)
    for name in names:
        v = getattr(value, name, _UNSET)
        if v is not _UNSET:
            object.__setattr__(new, name, _copy(v))
    return new


_UNSET = object()

_COPIERS: dict[type, Callable[[Any], Any]] = {kind: _compile(kind) for kind in RECORDS}
"""The copier of each record of the format (:data:`~amkspec.ir.jsonio.RECORDS`); any other
object, an attrs instance of another class included, is :func:`_other`'s."""
