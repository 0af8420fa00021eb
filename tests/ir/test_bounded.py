"""The bounded reader (amkspec.ir.bounded): limits and strict JSON, issue 12."""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from amkspec.ir import FormatError, bounded
from amkspec.ir.bounded import parse_json, read_input
from amkspec.ir.limits import MAX_INPUT_BYTES, MAX_JSON_DEPTH

DEPTH = MAX_JSON_DEPTH.default


@pytest.mark.parametrize("inner", ["1", "1.5", '"x"', "{}", "[]", 'null'])
@pytest.mark.parametrize("nonfinite", [False, True])
def test_the_depth_limit_accepts_depth_and_refuses_depth_plus_4(inner: str, nonfinite: bool) -> None:
    own = 1 if inner in ("{}", "[]") else 0  # levels the innermost value adds
    for opener, closer in (("[", "]"), ('{"a": ', "}")):
        ok = opener * (DEPTH - own) + inner + closer * (DEPTH - own)
        assert parse_json(ok, nonfinite=nonfinite) is not None
        deep = opener * (DEPTH + 4 - own) + inner + closer * (DEPTH + 4 - own)
        with pytest.raises(FormatError, match="nested deeper"):
            parse_json(deep, nonfinite=nonfinite)


def test_a_duplicate_key_names_the_path_of_its_object() -> None:
    with pytest.raises(FormatError) as info:
        parse_json('{"tasks": [{"a": 1}, {"b": 1, "c": {"x": 1, "x": 2}}]}')
    assert str(info.value) == 'tasks[1].c: duplicate key "x"'


def test_a_duplicate_key_before_a_syntax_error_reports_the_syntax_error() -> None:
    with pytest.raises(FormatError, match="not JSON: Expecting"):
        parse_json('{"a": 1, "a": 2, "b": [}')


@pytest.mark.parametrize("text", ['["\\ud800"]', '{"\\udfff": 1}', '["ok", "\ud800"]'])
def test_a_lone_surrogate_is_refused(text: str) -> None:
    with pytest.raises(FormatError, match="lone UTF-16 surrogate"):
        parse_json(text)


def test_a_surrogate_pair_is_text() -> None:
    assert parse_json('["\\ud83d\\ude00"]') == ["\U0001f600"]


@pytest.mark.parametrize("text", ["[NaN]", "[Infinity]", "[-Infinity]", "[1e400]"])
def test_non_finite_numbers_are_refused_except_in_programs(text: str) -> None:
    with pytest.raises(FormatError, match="not JSON"):
        parse_json(text)
    assert len(parse_json(text, nonfinite=True)) == 1


def test_python_int_limit_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="4300 digits"):
        parse_json("[" + "9" * 5000 + "]")


def test_gzip_is_bounded_and_corrupt_gzip_is_a_format_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.json.gz"
    path.write_bytes(gzip.compress(json.dumps([0] * 10_000).encode()))
    assert json.loads(read_input(path)) == [0] * 10_000
    monkeypatch.setenv("AMKSPEC_MAX_DECOMPRESSED_BYTES", "1000")
    with pytest.raises(FormatError, match="larger than 1000 bytes"):
        read_input(path)
    path.write_bytes(gzip.compress(b"[1]")[:-6])
    with pytest.raises(FormatError, match="corrupt gzip"):
        read_input(path)


def test_an_endless_stream_is_read_only_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMKSPEC_MAX_INPUT_BYTES", "4096")
    with pytest.raises(FormatError, match="larger than 4096 bytes"):
        read_input("/dev/zero")


@pytest.mark.parametrize(
    "raw", ["\u00b2", "\u0663", "9" * 5000, "0", "-5", "x"],
    ids=["superscript", "arabic-indic", "5000-digits", "zero", "negative", "letter"],
)
def test_an_unusable_limit_override_falls_back_to_the_default(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("AMKSPEC_MAX_INPUT_BYTES", raw)
    assert MAX_INPUT_BYTES.value() == MAX_INPUT_BYTES.default


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_text_that_is_not_utf8_is_refused(encoding: str) -> None:
    text = '{"a": [1, "\u00e9"]}'
    with pytest.raises(FormatError, match="not UTF-8") as info:
        parse_json(text.encode(encoding))
    assert info.value.path == "(root)"
    assert parse_json(text.encode("utf-8")) == parse_json(text.encode("utf-8-sig")) == {"a": [1, "\u00e9"]}


def test_a_duplicate_key_before_deep_nesting_is_a_format_error() -> None:
    text = '{"x": {"a": 1, "a": 2}, "y": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(FormatError):
        parse_json(text)


class _Finalised:
    """Garbage in a reference cycle whose finaliser needs more stack than the depth cap leaves."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.cycle = self

    def __del__(self) -> None:
        def down(n: int) -> int:
            return n if n == 0 else down(n - 1)

        down(2 * DEPTH)
        self.log.append("ran")


@pytest.mark.parametrize("text", ['{"a": [1, 2, {"trigger": 3}]}', '{"trigger": 1, "trigger": 2}'])
def test_a_collection_never_runs_under_the_depth_cap(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth cap lowers the recursion limit to just above the parse's own stack; garbage
    collected there would run other objects' finalisers with no stack to spare (they failed, and
    wrote "Exception ignored in sys.unraisablehook" into the command's error output). Garbage is
    made mid-parse, then enough allocations that the collector would run if it could."""
    log: list[str] = []
    real = bounded._pairs

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if items[0][0] == "trigger" and not log:  # the document itself, not the cap's probe
            log.append("parsing")
            for _ in range(50):
                _Finalised(log)
            [{} for _ in range(5000)]  # allocations that would trigger a collection
        return real(items)

    monkeypatch.setattr(bounded, "_pairs", pairs)
    monkeypatch.setattr(sys, "unraisablehook", lambda u: log.append(f"unraisable {u.exc_type.__name__}"))
    gc.collect()
    with contextlib.suppress(FormatError):
        parse_json(text)
    gc.collect()
    assert log == ["parsing"] + ["ran"] * 50
