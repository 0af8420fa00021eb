"""The on-disk JSON format (spec §6): byte-stable round trips, unknown fields, errors with paths."""

from __future__ import annotations

import copy
import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from amkspec import FormatError, VersionError, dump, dumps, load, loads
from amkspec.ir import IR_VERSION, VersionWarning, from_dict, to_dict
from amkspec.ir.errors import format_path
from amkspec.ir.limits import MAX_INT_DIGITS
from amkspec.programs.strategies import arbitrary_programs, mutated_documents, valid_programs
from tests.conftest import EXAMPLES, FIXTURES

ORIGINAL_JSON = [FIXTURES / "toy1L__default.json", FIXTURES / "toy2L__splitkv4__pos47.json"]
ORIGINAL_GZ = sorted(FIXTURES.glob("*.json.gz"))


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def _doc() -> dict[str, Any]:
    return json.loads(_text(FIXTURES / "toy1L__default.json"))


def test_fixture_set_is_present() -> None:
    assert all(p.is_file() for p in ORIGINAL_JSON)
    assert len(ORIGINAL_GZ) == 2


@pytest.mark.parametrize("path", ORIGINAL_JSON + ORIGINAL_GZ, ids=lambda p: p.name)
def test_original_programs_round_trip_byte_for_byte(path: Path) -> None:
    text = _text(path)
    assert dumps(load(path)) == text
    assert dumps(loads(text)) == text


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_amkspec_written_files_round_trip_byte_for_byte(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    out = tmp_path / "again.json"
    dump(load(path), out)
    assert out.read_text() == text


@given(valid_programs())
def test_valid_programs_round_trip_stably(prog: Any) -> None:
    text = dumps(prog)
    again = loads(text)
    assert again == prog
    assert dumps(again) == text


@given(arbitrary_programs())
def test_broken_programs_load_and_round_trip(prog: Any) -> None:
    text = dumps(prog)
    assert dumps(loads(text)) == text


def test_original_fields_are_all_kept() -> None:
    doc = _doc()
    assert to_dict(from_dict(copy.deepcopy(doc))) == doc


# -- unknown fields ------------------------------------------------------------------------------

UNKNOWN_AT = [
    (),
    ("target",),
    ("buffers", 3),
    ("counters", 0),
    ("tasks", 11),
    ("tasks", 11, "waits", 1),
    ("config",),
]


@pytest.mark.parametrize("where", UNKNOWN_AT, ids=lambda w: format_path(list(w)))
def test_unknown_fields_are_preserved_after_the_known_keys(where: tuple[Any, ...]) -> None:
    doc = _doc()
    node = doc
    for part in where:
        node = node[part]
    known = list(node)
    node["x_future"] = {"nested": [1, 2.5, None]}
    node["x_other"] = "kept"
    again = json.loads(dumps(loads(json.dumps(doc))))
    node_again = again
    for part in where:
        node_again = node_again[part]
    assert list(node_again) == [*known, "x_future", "x_other"]
    assert node_again["x_future"] == {"nested": [1, 2.5, None]}


def test_unknown_fields_in_pages_are_preserved() -> None:
    doc = json.loads((EXAMPLES / "spec_example.json").read_text())
    doc["pages"]["x_alloc"] = 1
    doc["pages"]["pages"][0]["x_page"] = [True]
    again = to_dict(from_dict(doc))
    assert again["pages"]["x_alloc"] == 1
    assert again["pages"]["pages"][0]["x_page"] == [True]


def test_unknown_fields_survive_an_edit() -> None:
    doc = _doc()
    doc["tasks"][0]["x_hint"] = 7
    prog = from_dict(doc)
    prog.tasks[0].label = "renamed"
    assert to_dict(prog)["tasks"][0]["x_hint"] == 7


# -- errors name the JSON path -------------------------------------------------------------------

def _set(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = _doc()
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


def _delete(path: tuple[Any, ...]) -> dict[str, Any]:
    doc = _doc()
    node = doc
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return doc


FORMAT_ERRORS = [
    (_set(("tasks", 3, "waits", 0, "threshold"),
     "2"), 'tasks[3].waits[0].threshold: expected an integer, got "2"'),
    (_set(("tasks", 3, "waits", 0, "threshold"), True),
     "tasks[3].waits[0].threshold: expected an integer, got true"),
    (_set(("tasks", 0, "inputs", 1), 1.0), "tasks[0].inputs[1]: expected an integer, got 1.0"),
    (_set(("tasks", 2, "op"), "GEMV"), 'tasks[2].op: unknown InstructionKind "GEMV"'),
    (_set(("tasks", 2, "op"), 5), "tasks[2].op: expected an InstructionKind name, got 5"),
    (_set(("buffers", 4, "dtype"), "FP32"), 'buffers[4].dtype: unknown DType "FP32"'),
    (_set(("buffers", 4, "shape"), "256x64"), 'buffers[4].shape: expected an array, got "256x64"'),
    (_set(("buffers", 4, "shape", 1), None), "buffers[4].shape[1]: expected an integer, got null"),
    (_set(("buffers", 0, "source"), 3), "buffers[0].source"),
    (_set(("target", "hbm_bandwidth_gbs"),
     "fast"), 'target.hbm_bandwidth_gbs: expected a number, got "fast"'),
    (_set(("target", "supports_cooperative"), 1),
     "target.supports_cooperative: expected true or false, got 1"),
    (_set(("config", "sm_assignment"), 3), "config.sm_assignment: expected a string or an object"),
    (_set(("config", "sm_assignment"), {"x": 1}), 'config.sm_assignment.x: expected an integer key'),
    (_set(("config", "tiling"), {"gemv": {"N_tile": "64"}}),
     'config.tiling.gemv.N_tile: expected an integer'),
    (_set(("pages",), {"buffer_to_page": {"3": 0}, "pages": [{"id": 0}]}),
     "pages.pages[0]: missing required field 'space'"),
    (_set(("pages",), {"buffer_to_page": {"3a": 0}, "pages": []}),
     'pages.buffer_to_page["3a"]: expected an integer key'),
    (_set(("tasks", 1, "waits"), {"counter": 0}), "tasks[1].waits: expected an array"),
    (_set(("tasks", 1, "waits", 0), [0, 1]), "tasks[1].waits[0]: expected an object"),
    (_set(("tasks", 1, "params"), []), "tasks[1].params: expected an object"),
    (_delete(("tasks", 5, "out_counter")), "tasks[5]: missing required field 'out_counter'"),
    (_delete(("buffers", 2, "kind")), "buffers[2]: missing required field 'kind'"),
    (_delete(("tasks",)), "(root): missing required field 'tasks'"),
    (_set(("meta",), []), "meta: expected an object"),
    (_set(("ir_version",), 2), "ir_version: expected a string, got 2"),
]


@pytest.mark.parametrize(("doc", "message"), FORMAT_ERRORS, ids=[m.split(":")[0] for _, m in FORMAT_ERRORS])
def test_format_errors_name_the_path(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError) as info:
        loads(json.dumps(doc))
    assert str(info.value).startswith(message)
    assert info.value.path == message.split(": ", 1)[0]


@pytest.mark.parametrize("digits", [MAX_INT_DIGITS.default + 1, 4301])
def test_an_integer_key_longer_than_the_digit_limit_is_a_format_error_at_its_key(digits: int) -> None:
    key = "-" + "9" * digits
    with pytest.raises(FormatError) as info:
        loads(json.dumps(_set(("pages",), {"buffer_to_page": {key: 0}, "pages": []})))
    assert info.value.path == f'pages.buffer_to_page["{key}"]'
    assert info.value.reason == f"an integer key has more than {MAX_INT_DIGITS.default} digits"
    longest = "9" * MAX_INT_DIGITS.default
    assert loads(json.dumps(_set(("pages",), {"buffer_to_page": {longest: 0}, "pages": []}))).pages


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", '"program"', "\xff", b"\xff\xfe"])
def test_not_a_program_is_a_format_error_at_the_root(text: str | bytes) -> None:
    with pytest.raises(FormatError) as info:
        loads(text)
    assert info.value.path == "(root)"


def test_deep_nesting_is_a_format_error() -> None:
    with pytest.raises(FormatError):
        loads("[" * 100_000 + "]" * 100_000)


def test_unreadable_and_corrupt_files_are_format_errors(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    with pytest.raises(FormatError, match="gzip"):
        load(bad)


# -- versions ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("key", "value"), [("ir_version", "1.0.0"), ("abi_version", "1.2"), ("ir_version", "x")]
)
def test_major_version_mismatch_is_a_version_error(key: str, value: str) -> None:
    with pytest.raises(VersionError, match=key):
        loads(json.dumps(_set((key,), value)))


@pytest.mark.parametrize(
    ("key", "value"), [("ir_version", "0.3.0"), ("ir_version", "0.2.1"), ("abi_version", "0.9")]
)
def test_newer_minor_version_loads_with_a_warning(key: str, value: str) -> None:
    with pytest.warns(VersionWarning, match=key):
        prog = loads(json.dumps(_set((key,), value)))
    assert getattr(prog, key) == value
    assert json.loads(dumps(prog))[key] == value


@pytest.mark.parametrize("value", ["0.1.0", IR_VERSION, "0.2"])
def test_same_or_older_minor_version_loads_silently(value: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loads(json.dumps(_set(("ir_version",), value))).ir_version == value


@pytest.mark.parametrize("value", ["0.\u00b2", "0.\u0663", "0.2\uff11"])
def test_non_ascii_digits_in_a_version_do_not_count(value: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loads(json.dumps(_set(("abi_version",), value))).abi_version == value


@pytest.mark.parametrize("key", ["ir_version", "abi_version"])
def test_a_version_component_longer_than_the_digit_limit_is_a_format_error(key: str) -> None:
    with pytest.raises(FormatError) as info:
        loads(json.dumps(_set((key,), "0." + "9" * 5000)))
    assert info.value.path == key
    assert "9" * 41 not in str(info.value)


def test_missing_versions_default_to_ours() -> None:
    doc = _doc()
    del doc["ir_version"], doc["abi_version"]
    assert loads(json.dumps(doc)).ir_version == IR_VERSION


# -- loading never tracebacks --------------------------------------------------------------------

@given(mutated_documents())
def test_loading_mutated_documents_raises_only_format_or_version_errors(doc: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VersionWarning)
        try:
            prog = from_dict(doc)
        except (FormatError, VersionError) as exc:
            assert str(exc)
            return
    text = dumps(prog)
    assert dumps(loads(text)) == text


def test_broken_but_representable_programs_load() -> None:
    doc = _doc()
    doc["tasks"][1]["waits"] = [{"counter": 999, "threshold": 0}, {"counter": 1, "threshold": -5}]
    doc["tasks"][2]["id"] = 77
    doc["tasks"][3]["inputs"] = [12345]
    doc["tasks"][0]["waits"] = [{"counter": 1, "threshold": 1}]  # task 1 waits on task 0: a cycle
    doc["tasks"][4]["params"] = {"K": True, "eps": float("nan"), "unknown": [1]}
    prog = loads(json.dumps(doc))
    assert prog.tasks[1].waits[0].counter == 999
    assert prog.tasks[2].id == 77
    assert prog.tasks[4].params["K"] is True
    assert prog.topological_order() is None


def test_the_garbage_collector_is_restored_after_loading_and_dumping() -> None:
    import gc

    assert gc.isenabled()
    dumps(loads(_text(ORIGINAL_JSON[0])))
    with pytest.raises(FormatError):
        loads("{")
    assert gc.isenabled()
    gc.disable()
    try:
        loads(_text(ORIGINAL_JSON[0]))
        assert not gc.isenabled()
    finally:
        gc.enable()
