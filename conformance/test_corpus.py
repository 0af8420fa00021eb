"""The kit checks its own corpus (spec §9.2): well-formed cases citing known rules, every MUST
traced to a case, every diagnostic code triggered and near-missed, every opcode × dtype covered,
and the committed files equal to what the generators write."""

from __future__ import annotations

import json
from pathlib import Path

from amkspec.conformance.cases import KINDS, default_cases_dir, discover
from amkspec.conformance.rules import RULES, untraced_musts
from amkspec.ir import InstructionKind
from amkspec.proofs.diagnostics import CODES
from conformance import make_cases, make_format_cases, make_memory_cases, make_refuse_cases, schemas
from conformance.casefiles import render

CASES_DIR = default_cases_dir()
CASES = discover(CASES_DIR)
UNTRIGGERABLE = {"S199"}
"""Codes no program triggers on purpose (S199 is the validator's internal-error guard)."""


def test_cases_are_well_formed_and_cite_known_rules() -> None:
    for case in CASES:
        assert case.kind in KINDS and case.description and case.rules, case.id
        assert set(case.rules) <= set(RULES), (case.id, set(case.rules) - set(RULES))
        expect = case.body["expect"] if case.kind != "run" else case.body["steps"][0]["expect"]
        assert expect, case.id
        if case.kind == "validate":
            assert expect["verdict"] in ("accepted", "rejected"), case.id
            assert set(expect.get("codes", []) + expect.get("absent_codes", [])) <= set(CODES), case.id


def test_every_must_has_a_case() -> None:
    assert untraced_musts({r for case in CASES for r in case.rules}) == []
    assert "FMT-RT-1" in untraced_musts(set())  # the check can fail


def test_every_code_has_a_trigger_and_a_near_miss() -> None:
    validate = [c.body for c in CASES if c.kind == "validate"]
    triggered = {code for case in validate for code in case["expect"].get("codes", [])}
    near = {
        code
        for case in validate
        if case["expect"]["verdict"] == "accepted"
        for code in case["expect"].get("absent_codes", [])
    }
    wanted = set(CODES) - UNTRIGGERABLE
    assert sorted(wanted - triggered) == []
    assert sorted(wanted - near) == []


def test_every_opcode_and_dtype_has_a_numeric_case() -> None:
    from conformance.make_run_cases import MATRIX

    covered = {(c.body["opcode"], c.body["dtype"]) for c in CASES if c.kind == "run" and "opcode" in c.body}
    wanted = {(op.name, dt.name) for op, dtypes, _ in MATRIX for dt in dtypes}
    assert sorted(wanted - covered) == []
    assert {op for op, _ in covered} == {k.name for k in InstructionKind}


def test_committed_validate_cases_match_the_generators() -> None:
    generated = make_cases.build_cases()
    folders = set(make_cases.FAMILY_DIRS.values())
    on_disk = {
        str(p.relative_to(CASES_DIR)): p.read_text()
        for p in CASES_DIR.rglob("*.json")
        if p.parent.name in folders
    }
    assert sorted(on_disk) == sorted(generated)
    assert [k for k in generated if on_disk[k] != generated[k]] == []
    memory = {n: render(d) for n, d in make_memory_cases.build_cases().items()}
    assert {p.name: p.read_text() for p in make_memory_cases.OUT_DIR.glob("*.json")} == memory


def test_committed_format_and_refuse_cases_match_the_generators() -> None:
    for module in (make_format_cases, make_refuse_cases):
        generated = {n: render(d) for n, d in module.build_cases().items()}
        assert {p.name: p.read_text() for p in module.OUT_DIR.glob("*.json")} == generated


def test_committed_run_cases_match_the_generator() -> None:
    """Same files, programs and inputs; expected outputs are judged by ``test_run_oracle`` instead of
    byte equality, since the last bit of a float result may differ between CPUs."""
    from conformance.make_run_cases import OUT_DIR, build_files

    generated = build_files()
    on_disk = {str(p.relative_to(OUT_DIR)): p for p in OUT_DIR.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(generated)
    for rel, data in generated.items():
        if ".out." in rel:
            continue
        if rel.endswith(".json") and "/" not in rel:
            assert _without_outputs(json.loads(on_disk[rel].read_text())) == _without_outputs(
                json.loads(data)
            ), rel
        else:
            assert on_disk[rel].read_bytes() == data, rel


def _without_outputs(doc: dict) -> dict:  # type: ignore[type-arg]
    for step in doc["steps"]:
        step["expect"] = {
            k: {"dtype": v["dtype"], "shape": v["shape"]} for k, v in step["expect"]["outputs"].items()
        }
    return doc


def test_shipped_schemas_are_current() -> None:
    for name, schema in schemas.SCHEMAS.items():
        assert (schemas.KIT / name).read_text() == schemas.render(schema), name


def test_the_protocol_schema_is_a_valid_2020_12_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(
        json.loads(Path(schemas.KIT / "protocol.schema.json").read_text())
    )
