"""The task list a column at a time (spec §1.4), for the checks that test every task at once.

A check whose outcome depends only on a task's params can run once per distinct params dict;
its key must then be exact: two dicts share a key only when they hold the same keys and values,
of the same types, in the same order (:func:`param_key`).
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from itertools import repeat
from typing import Any, NamedTuple

from amkspec.ir.enums import InstructionKind
from amkspec.ir.model import Task

MARSHAL_VERSION = 2
"""The last marshal format without back-references: equal contents give equal bytes whatever
objects they share."""


class TaskColumns(NamedTuple):
    """Fields of every task, in task order (:func:`task_columns`)."""

    ops: list[Any]
    inputs: list[Any]
    outputs: list[Any]
    waits: list[Any]
    params: list[Any]
    param_keys: list[bytes | None]
    """:func:`param_key` of each task's params; equal keys are one bytes object."""
    all_keyed: bool
    """No entry of ``param_keys`` is None."""
    plain_ops: bool
    """Every entry of ``ops`` is exactly an :class:`~amkspec.ir.InstructionKind` (tested once here
    for the checks that take the opcodes a column at a time)."""
    params_dicts: bool
    """Every entry of ``params`` is exactly a dict: read off the distinct keys when ``all_keyed``
    (marshal takes no dict subclass and writes a dict as ``{``), False otherwise."""


def task_columns(
    tasks: list[Any], inputs: list[Any] | None = None, outputs: list[Any] | None = None,
    waits: list[Any] | None = None,
) -> TaskColumns | None:
    """The columns of a task list whose every record is exactly a :class:`~amkspec.ir.Task`, else
    None. ``inputs``, ``outputs`` and ``waits``, when given, are those fields of every task, already
    read (:attr:`~amkspec.proofs.index.ProgramIndex.fields`)."""
    if not every_exactly(tasks, Task):
        return None
    params = [t.params for t in tasks]
    keys: list[bytes | None]
    # equal keys are one bytes object: a long program repeats few params (a million keys of
    # their own took 70 MiB); as fast as keeping each (checks grouping by key compare by identity)
    interned = _Interned()
    shared = interned.__getitem__
    try:  # a column at a time; the first value marshal does not take stops it
        keys, all_keyed = list(map(shared, map(marshal.dumps, params, repeat(MARSHAL_VERSION)))), True
    except ValueError:
        keys, all_keyed = list(map(shared, map(param_key, params))), False
    params_dicts = all_keyed and all(key[:1] == _DICT for key in interned if key is not None)
    inputs = [t.inputs for t in tasks] if inputs is None else inputs
    outputs = [t.outputs for t in tasks] if outputs is None else outputs
    waits = [t.waits for t in tasks] if waits is None else waits
    ops = [t.op for t in tasks]
    plain_ops = every_exactly(ops, InstructionKind)
    return TaskColumns(ops, inputs, outputs, waits, params, keys, all_keyed, plain_ops, params_dicts)


_DICT = marshal.dumps({}, MARSHAL_VERSION)[:1]
"""The first byte marshal writes for a dict (its type code)."""


def every_exactly(values: Sequence[Any], kind: type) -> bool:
    """Every value's type is exactly ``kind`` (no subclass: ``True`` is not an int here): one
    C-level count over the types, faster than a set of them (71 against 106 µs on 8k values)."""
    return list(map(type, values)).count(kind) == len(values)


class _Interned(dict[bytes | None, bytes | None]):
    """``interned[key]`` is the first key equal to ``key`` that was looked up."""

    def __missing__(self, key: bytes | None) -> bytes | None:
        self[key] = key
        return key


def param_key(params: Any) -> bytes | None:
    """An exact key of a params dict, ``marshal.dumps``, or None. marshal takes only builtin types,
    never a subclass (an IntEnum, a str subclass: then None), and writes each value with its type
    (``True``, ``1`` and ``1.0`` differ; a float by its bits; a tuple is not a list), so equal keys
    mean equal contents of equal types in equal order."""
    try:
        return marshal.dumps(params, MARSHAL_VERSION)
    except ValueError:
        return None
