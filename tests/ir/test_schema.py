"""The JSON Schema of spec §6: generated from the model, valid, and in agreement with the loader."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import given

from amkspec.ir import FormatError, MegakernelProgram, VersionError, VersionWarning, from_dict, to_dict
from amkspec.ir.jsonio import RECORDS, REQUIRED_TOP_LEVEL
from amkspec.ir.schema import SCHEMA_DIALECT, program_schema
from amkspec.programs.strategies import arbitrary_programs, mutated_documents, valid_programs
from tests.conftest import EXAMPLES, FIXTURES

SCHEMA = program_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
DOCUMENTS = [
    *sorted(EXAMPLES.glob("*.json")),
    FIXTURES / "toy1L__default.json",
    FIXTURES / "toy2L__splitkv4__pos47.json",
    *sorted(FIXTURES.glob("*.json.gz")),
]


def _read(path: Path) -> Any:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def _errors(doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert SCHEMA["$schema"] == SCHEMA_DIALECT
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert "0.2.0" in SCHEMA["description"]


def test_schema_is_generated_from_every_record_field() -> None:
    for cls in RECORDS:
        node = SCHEMA if cls is MegakernelProgram else SCHEMA["$defs"][cls.__name__]
        names = [f.name for f in attrs.fields(cls) if f.name != "extra"]
        assert list(node["properties"]) == names
        required = [f.name for f in attrs.fields(cls) if f.default is attrs.NOTHING]
        assert set(required) <= set(node["required"])
        assert node["additionalProperties"] is True
    assert set(REQUIRED_TOP_LEVEL) <= set(SCHEMA["required"])


def test_enums_and_int_keyed_maps() -> None:
    assert "ATTENTION_COMBINE" in SCHEMA["$defs"]["InstructionKind"]["enum"]
    b2p = SCHEMA["$defs"]["PageAllocation"]["properties"]["buffer_to_page"]
    assert b2p["propertyNames"] == {"pattern": "^-?[0-9]+$"}
    sm = SCHEMA["$defs"]["ScheduleConfig"]["properties"]["sm_assignment"]
    assert {"type": "string"} in sm["anyOf"]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_example_and_fixture_validates(path: Path) -> None:
    assert _errors(_read(path)) == []


@given(valid_programs())
def test_valid_programs_validate(prog: MegakernelProgram) -> None:
    assert _errors(to_dict(prog)) == []


@given(arbitrary_programs())
def test_broken_but_representable_programs_validate(prog: MegakernelProgram) -> None:
    assert _errors(json.loads(json.dumps(to_dict(prog)))) == []


@given(mutated_documents())
def test_whatever_the_loader_accepts_the_schema_accepts(doc: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VersionWarning)
        try:
            from_dict(doc)
        except (FormatError, VersionError):
            return
    assert _errors(doc) == []


def _toy() -> dict[str, Any]:
    doc: dict[str, Any] = _read(FIXTURES / "toy1L__default.json")
    return doc


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.pop("tasks"),
        lambda d: d.__setitem__("ir_version", "1.0.0"),
        lambda d: d["buffers"][0].__setitem__("dtype", "FP32"),
        lambda d: d["tasks"][0].__setitem__("out_counter", "0"),
        lambda d: d["tasks"][1]["waits"][0].pop("threshold"),
        lambda d: d.__setitem__("pages", {"buffer_to_page": {"x": 0}, "pages": []}),
        lambda d: d["target"].__setitem__("wddm_tdr", "yes"),
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(edit: Any) -> None:
    doc = _toy()
    edit(doc)
    with pytest.raises((FormatError, VersionError)):
        from_dict(doc)
    assert _errors(doc)
