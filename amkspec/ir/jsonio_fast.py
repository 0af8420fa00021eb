"""The optimistic reader of the JSON format (spec §6): the fast path of :func:`amkspec.ir.loads`.

:func:`amkspec.ir.loads` first hands the text to :func:`fast_loads`. It parses with ``orjson``
(a C parser that builds plain dicts and lists) and structures the records with code generated
once per record class from its attrs fields, checking every value as strictly as the
converter of :mod:`amkspec.ir.jsonio` does. It gives up, returning ``None``, the moment anything
is not plainly fine, and the caller then runs the strict reader, which finds and names the
problem. So the fast path never *reports* anything: a program it returns is exactly the program
the strict reader would have built, and every error (path, message, type) is the strict
reader's.

What the fast path must rule out, because ``orjson`` alone would accept it:

* **repeated keys** (``orjson`` keeps the last): a key is the only place a ``:`` appears in
  JSON outside a string, so when the text holds exactly as many ``:`` characters as the parsed
  document holds keys, no key was repeated and no string holds a ``:`` (a repeated key would
  leave more ``:`` than keys). Any other count goes to the strict reader.
* **nesting deeper than** ``max_json_depth``: the records have a fixed depth (at most
  :data:`RECORD_DEPTH`); free-form values (``params``, ``meta``, unknown fields) are walked
  and may nest at most :data:`FREE_DEPTH` more levels.
* **integers beyond 64 bits**, which ``orjson`` turns into floats: a free-form or float
  field's float of magnitude ≥ 2**63 goes to the strict reader.
* ``int``-keyed maps take only canonical keys (``str(int(key)) == key``) of at most
  ``max_int_digits`` characters: ``"03"`` (an alias of ``"3"``) or an over-long key goes to the
  strict reader, which reports it.

Lone surrogates, ``NaN``/``Infinity``, over-long numbers, a byte-order mark, other encodings and
syntax errors all make ``orjson`` fail, which also goes to the strict reader. A document that
would warn (a newer minor version) goes there too, so the warning is issued once, by it.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

import attrs
import orjson

from amkspec.ir.enums import ABI_VERSION, IR_VERSION
from amkspec.ir.limits import MAX_INT_DIGITS, MAX_JSON_DEPTH, MAX_SHAPE_DIMS
from amkspec.ir.model import Buffer, MegakernelProgram

RECORD_DEPTH = 8
"""Nesting of the records' own containers, with room to spare (root, tasks, task, waits,
wait, ... is 5 deep at most)."""

FREE_DEPTH = MAX_JSON_DEPTH.default - RECORD_DEPTH
"""How deep a free-form value (``params``, ``meta``, an unknown field) may nest here."""

_FLOAT_BOUND = float(2**63)
"""A parsed float at least this large may have been an integer literal beyond 64 bits."""


class _Slow(Exception):
    """Not plainly fine: the strict reader takes over."""


class _Keys:
    """A running count of the object keys structured so far (see the module doc)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


def free(value: Any, room: int, keys: _Keys) -> Any:
    """A free-form value, checked: nesting within ``room`` levels, no float ≥ 2**63 (which may
    have been a long integer); its object keys are counted."""
    t = type(value)
    if t is dict:
        if room <= 0:
            raise _Slow
        keys.n += len(value)
        for item in value.values():
            if type(item) in _NESTED:
                free(item, room - 1, keys)
    elif t is list:
        if room <= 0:
            raise _Slow
        for item in value:
            if type(item) in _NESTED:
                free(item, room - 1, keys)
    elif t is float and not -_FLOAT_BOUND < value < _FLOAT_BOUND:
        raise _Slow
    return value


_NESTED = frozenset({dict, list, float})


def _int_key_map(value: Any, keys: _Keys) -> dict[int, int]:
    if type(value) is not dict:
        raise _Slow
    keys.n += len(value)
    out = {}
    digits = MAX_INT_DIGITS.value()
    for key, item in value.items():
        if len(key) > digits:  # perhaps too long (the strict reader judges it), or too slow for int()
            raise _Slow
        k = int(key)
        if str(k) != key or type(item) is not int:
            raise _Slow
        out[k] = item
    return out


class _Codegen:
    """Generates one ``build_<Record>(d, keys)`` function per record class."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {
            "_Slow": _Slow, "free": free, "_int_key_map": _int_key_map, "FREE": FREE_DEPTH,
            "FB": _FLOAT_BOUND, "NESTED": _NESTED,
        }
        self.done: set[type] = set()
        self.sources: list[str] = []

    def name(self, obj: Any, hint: str) -> str:
        key = f"_{hint}_{len(self.env)}"
        self.env[key] = obj
        return key

    def record(self, cls: type) -> str:
        fn = f"build_{cls.__name__}"
        if cls in self.done:
            return fn
        self.done.add(cls)
        attrs.resolve_types(cls)
        fields = [f for f in attrs.fields(cls) if f.name != "extra"]
        lines = [f"def {fn}(d, keys):", "    if type(d) is not dict: raise _Slow", "    keys.n += len(d)",
                 "    missing = 0"]
        args = []
        for f in fields:
            var = f"v_{f.name}"
            required = f.default is attrs.NOTHING or (cls is MegakernelProgram and f.name in _REQUIRED)
            checks = self.check(var, f.type)
            if required:
                lines += [f"    {var} = d[{f.name!r}]", *("    " + s for s in checks)]
            else:
                lines += [f"    try: {var} = d[{f.name!r}]",
                          f"    except KeyError: {var} = {self.default(f)}; missing += 1",
                          *(["    else:", *("        " + s for s in checks)] if checks else [])]
            args.append(f"{f.name}={var}" if f.kw_only else var)
        known = self.name(frozenset(f.name for f in fields), "known")
        lines.append(f"    if len(d) + missing == {len(fields)}: extra = {{}}")
        lines.append(f"    else: extra = {{k: free(v, FREE, keys) for k, v in d.items()"
                     f" if k not in {known}}}")
        if cls is Buffer:
            lines.append(f"    if len(v_shape) > {MAX_SHAPE_DIMS.default}: raise _Slow")
        lines.append(f"    return {self.name(cls, 'cls')}({', '.join(args)}, extra=extra)")
        self.sources.append("\n".join(lines))
        return fn

    def default(self, f: Any) -> str:
        if isinstance(f.default, attrs.Factory):  # type: ignore[arg-type]
            return f"{self.name(f.default.factory, 'factory')}()"
        return self.name(f.default, "default")

    def check(self, var: str, t: Any) -> list[str]:
        """Statements that check ``var`` against type ``t`` and rebind it to the structured value."""
        origin, args = get_origin(t), get_args(t)
        if t is int:
            return [f"if type({var}) is not int: raise _Slow"]
        if t is str:
            return [f"if type({var}) is not str: raise _Slow"]
        if t is bool:
            return [f"if type({var}) is not bool: raise _Slow"]
        if t is float:
            return [f"if type({var}) is int: {var} = float({var})",
                    f"elif type({var}) is not float or not -FB < {var} < FB: raise _Slow"]
        if isinstance(t, type) and issubclass(t, enum.Enum):
            members = self.name(dict(t.__members__), "members")
            return [f"{var} = {members}[{var}]"]  # a name (a str) or a KeyError/TypeError
        if attrs.has(t):
            return [f"{var} = {self.record(t)}({var}, keys)"]
        if origin in (Union, types.UnionType):
            if type(None) in args:
                (inner,) = [a for a in args if a is not type(None)]
                return [f"if {var} is not None:", *("    " + s for s in self.check(var, inner))]
            if args == (str, dict[int, int]):
                return [f"if type({var}) is not str: {var} = _int_key_map({var}, keys)"]
        if origin in (list, tuple) and (origin is list or args[1:] == (...,)):
            if attrs.has(args[0]):
                return [f"if type({var}) is not list: raise _Slow",
                        f"{var} = [{self.record(args[0])}(x, keys) for x in {var}]"]
            item = f"{var}_i"
            inner = self._in_place(item, args[0], t)
            lines = [f"if type({var}) is not list: raise _Slow", f"for {item} in {var}:",
                     *("    " + s for s in inner)]
            return lines + ([] if origin is list else [f"{var} = tuple({var})"])
        if origin is dict and args == (int, int):
            return [f"{var} = _int_key_map({var}, keys)"]
        if origin is dict and args[0] is str:
            if args[1] is Any:
                return [f"if type({var}) is not dict: raise _Slow", f"keys.n += len({var})",
                        f"for {var}_v in {var}.values():",
                        f"    if type({var}_v) is float:",
                        f"        if not -FB < {var}_v < FB: raise _Slow",
                        f"    elif type({var}_v) in NESTED: free({var}_v, FREE - 1, keys)"]
            item = f"{var}_v"
            return [f"if type({var}) is not dict: raise _Slow", f"keys.n += len({var})",
                    f"for {item} in {var}.values():", *("    " + s for s in self._in_place(item, args[1], t))]
        raise TypeError(f"no fast path for {t}")

    def _in_place(self, item: str, t: Any, outer: Any) -> list[str]:
        """Checks of a container's item that keep the item as parsed (no rebuilding needed)."""
        inner = self.check(item, t)
        if any(s.lstrip().startswith(f"{item} =") for s in inner):
            raise TypeError(f"no fast path for {outer}")
        return inner

    def compile(self) -> dict[str, Any]:
        exec("\n\n".join(self.sources), self.env)  # generated from the records' attrs fields only
        return self.env


_REQUIRED = ("buffers", "counters", "tasks")
"""Top-level keys a program must have (as :data:`amkspec.ir.jsonio.REQUIRED_TOP_LEVEL`)."""


def _build_program() -> Callable[[Any, _Keys], MegakernelProgram]:
    gen = _Codegen()
    fn = gen.record(MegakernelProgram)
    built: Callable[[Any, _Keys], MegakernelProgram] = gen.compile()[fn]
    return built


_BUILD = _build_program()


def _version_ok(version: Any, ours: str) -> bool:
    """True when reading ``version`` neither fails nor warns (absent, or exactly ours)."""
    return version is None or version == ours


def fast_loads(text: str | bytes) -> MegakernelProgram | None:
    """The program of ``text`` when it is plainly fine, else None (see the module doc)."""
    try:
        doc = orjson.loads(text)
        if type(doc) is not dict:
            return None
        if not (_version_ok(doc.get("ir_version"), IR_VERSION)
                and _version_ok(doc.get("abi_version"), ABI_VERSION)):
            return None
        keys = _Keys()
        prog = _BUILD(doc, keys)
        colons = text.count(b":") if isinstance(text, bytes) else text.count(":")
    except Exception:  # noqa: BLE001 - anything unusual is the strict reader's to report
        return None
    return prog if colons == keys.n else None
