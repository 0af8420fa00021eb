"""The fast path of loads (amkspec.ir.jsonio_fast, issue 13): the same program or the same error as
the strict reader, on every input."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec import dumps, loads
from amkspec.ir import FormatError, VersionError, from_dict
from amkspec.ir.bounded import parse_json
from amkspec.ir.jsonio_fast import fast_loads
from amkspec.programs.strategies import arbitrary_programs, mutated_documents, valid_programs
from tests.conftest import FIXTURES

TOY = (FIXTURES / "toy1L__default.json").read_text()


def _strict(text: str | bytes) -> Any:
    """The strict reader alone: the program, or the error (type and message) it raises."""
    return _outcome(lambda: from_dict(parse_json(text, nonfinite=True)))


def _outcome(read: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            prog = read()
        except (FormatError, VersionError) as exc:
            return type(exc), str(exc), [str(w.message) for w in caught]
    return dumps(prog), prog, [str(w.message) for w in caught]


def _same_as_strict(text: str | bytes) -> None:
    assert _outcome(lambda: loads(text)) == _strict(text)


@given(st.one_of(valid_programs(), arbitrary_programs()))
def test_written_programs_take_the_fast_path_and_build_the_same_program(prog: Any) -> None:
    text = dumps(prog)
    fast = fast_loads(text)
    if fast is None:  # only where the fast path cannot vouch for the text (see the module doc)
        assert _unvouched(json.loads(text))
    else:
        assert fast == from_dict(parse_json(text, nonfinite=True))
        assert dumps(fast) == text


def _unvouched(value: Any) -> bool:
    """A float of magnitude ≥ 2**63 (perhaps a long integer) or a ':' in a key or string."""
    if isinstance(value, dict):
        return any(":" in k or _unvouched(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unvouched(v) for v in value)
    if isinstance(value, float):
        return not abs(value) < 2.0**63
    return isinstance(value, str) and ":" in value


ORIGINAL = [FIXTURES / "toy1L__default.json", FIXTURES / "toy2L__splitkv4__pos47.json"]


@pytest.mark.parametrize("path", ORIGINAL, ids=lambda p: p.name)
def test_the_original_programs_take_the_fast_path(path: Any) -> None:
    text = path.read_text()
    assert fast_loads(text) is not None
    assert fast_loads(text.encode()) == loads(text)


@given(mutated_documents())
def test_edited_documents_give_the_strict_readers_outcome(doc: Any) -> None:
    _same_as_strict(json.dumps(doc))


_ALPHABET = st.sampled_from([*'{}[],:"0123456789-.eE \\u', "null", "true", "NaN", '"x"', "\\ud800"])


@given(st.data())
def test_text_edits_give_the_strict_readers_outcome(data: st.DataObject) -> None:
    text = TOY
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + data.draw(_ALPHABET) + text[at + cut:]
    _same_as_strict(text)


def _edit(old: str, new: str) -> str:
    assert old in TOY
    return TOY.replace(old, new, 1)


REFUSED = {
    "a repeated key": _edit('"id": 0,', '"id": 0, "id": 0,'),
    "a repeated key in params": _edit('"params": {', '"params": {"x": 1, "x": 2, '),
    "a repeated unknown key": _edit('"id": 0,', '"zz": 1, "zz": 2, "id": 0,'),
    "an int-key alias": _edit('"pages": null', '"pages": {"buffer_to_page": {"07": 1, "7": 2}}'),
    "a non-canonical int key": _edit('"sm_assignment": "load_balance"', '"sm_assignment": {"+7": 1}'),
    "a 70-bit integer in params": _edit('"params": {', '"params": {"x": 1180591620717411303424, '),
    "a 41-digit integer": _edit('"est_bytes": 0', '"est_bytes": ' + "9" * 41),
    "a 5000-digit integer": _edit('"params": {', '"params": {"x": ' + "9" * 5000 + ", "),
    "NaN in params": _edit('"params": {', '"params": {"x": NaN, '),
    "an overflowing float": _edit('"params": {', '"params": {"x": 1e400, '),
    "deep params": _edit('"params": {', '"params": {"x": ' + "[" * 95 + "]" * 95 + ", "),
    "a lone surrogate": _edit('"label": "', '"label": "\\ud800'),
    "a newer minor version": _edit('"ir_version": "0.2.0"', '"ir_version": "0.9.0"'),
    "a newer major version": _edit('"ir_version": "0.2.0"', '"ir_version": "9.0.0"'),
    "a missing required field": _edit('"out_counter": 0,', ""),
    "a wrong type": _edit('"id": 0,', '"id": "0",'),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_fast_path_cannot_vouch_for_is_left_to_the_strict_reader(name: str) -> None:
    text = REFUSED[name]
    assert fast_loads(text) is None
    _same_as_strict(text)


UNUSUAL: dict[str, str | bytes] = {
    "a ':' in a string": _edit('"label": "', '"label": "a:b'),  # the ':' count proves nothing then
    "a str with a byte-order mark": "\ufeff" + TOY,
    "UTF-16 bytes": TOY.encode("utf-16"),
    "UTF-8 bytes with a byte-order mark": b"\xef\xbb\xbf" + TOY.encode(),
}


@pytest.mark.parametrize("name", sorted(UNUSUAL))
def test_unusual_texts_are_left_to_the_strict_reader(name: str) -> None:
    assert fast_loads(UNUSUAL[name]) is None
    _same_as_strict(UNUSUAL[name])


def test_a_surrogate_pair_and_unknown_fields_take_the_fast_path() -> None:
    text = _edit('"label": "', '"label": "\\ud83d\\ude00')
    text = text.replace('"id": 0,', '"x_new": [[{"a": 1.5}]], "id": 0,', 1)
    prog = fast_loads(text)
    assert prog is not None
    assert prog == from_dict(parse_json(text, nonfinite=True))
