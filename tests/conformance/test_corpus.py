"""The kit checks its own corpus (spec §9.2): well-formed cases citing known rules, every MUST
traced to a case, every diagnostic code triggered and near-missed, every opcode × dtype covered,
and the committed files equal to what the generators write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from amkspec.conformance.cases import KINDS, default_cases_dir, discover
from amkspec.conformance.judge import mismatch
from amkspec.conformance.rules import (
    CODE_RULE,
    ERROR_CLASS,
    ERROR_PATH,
    QUANT_AFFINE_RULE,
    RETIRED,
    RULES,
    rule_id_for_op,
    untraced_musts,
)
from amkspec.conformance.tensors import decode
from amkspec.ir import InstructionKind
from amkspec.proofs.diagnostics import CODES
from corpus import make_cases, make_format_cases, make_memory_cases, make_refuse_cases, schemas
from corpus.casefiles import render
from corpus.make_run_cases import tolerance_table

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


def test_each_case_cites_what_its_checks_can_tell_apart() -> None:
    """A numeric case cites its opcode's rule only (one task cannot show counter firing), a refusal
    names amkspec's vocabulary rules for its error class and path, a validate case VAL-CODE-1 for
    its codes; no case cites a retired rule."""
    for case in CASES:
        assert not set(case.rules) & set(RETIRED), case.id
        if case.kind == "run" and "opcode" in case.body:  # or the rule of the opcode's affine form (§7.9)
            op_rule = rule_id_for_op(InstructionKind[case.body["opcode"]])
            assert case.rules in ((op_rule,), (QUANT_AFFINE_RULE,)), case.id
        if case.kind == "format" and case.body["expect"]["outcome"] == "refused":
            assert {ERROR_CLASS, ERROR_PATH} <= set(case.rules), case.id
        if case.kind == "validate":
            assert CODE_RULE in case.rules, case.id
    assert {c.id for c in CASES if "EXEC-FIRE-1" in c.rules} == {"run/fire_chain", "run/fire_join"}


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
    from corpus.make_run_cases import MATRIX

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


def test_committed_format_and_refuse_cases_match_the_generators(tmp_path: Path) -> None:
    for module in (make_format_cases, make_refuse_cases):
        generated = module.build_cases()
        assert sorted(p.name for p in module.OUT_DIR.glob("*.json")) == sorted(generated)
        for name, doc in generated.items():
            committed = json.loads((module.OUT_DIR / name).read_text())
            assert _differences(doc, committed, tmp_path, module.OUT_DIR, tolerance_table()) == [], name


def test_committed_run_cases_match_the_generator(tmp_path: Path) -> None:
    """Same files and programs; every tensor (weights, inputs, prior KV state and expected outputs)
    equal to what the generator computes on this host within the case's tolerance, integers exactly.
    A computed float may differ in its last bits between CPUs (spec §9.2), so no tensor is compared
    byte for byte; ``test_run_oracle`` checks the expected outputs against independent formulas."""
    from corpus.make_run_cases import OUT_DIR, build_files

    generated = build_files()
    for rel, data in generated.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert sorted(str(p.relative_to(OUT_DIR)) for p in OUT_DIR.rglob("*") if p.is_file()) == sorted(generated)
    for rel in (r for r in generated if r.endswith(".json")):
        fresh, committed = json.loads((tmp_path / rel).read_text()), json.loads((OUT_DIR / rel).read_text())
        tolerance = fresh.get("tolerance", tolerance_table())
        assert _differences(fresh, committed, tmp_path, OUT_DIR, tolerance) == [], rel


def _differences(
    fresh: Any, committed: Any, fresh_base: Path, committed_base: Path, tolerance: dict[str, list[float]]
) -> list[str]:
    """Where ``committed`` differs from ``fresh``: tensor objects (inline or ``.npy``) by value within
    ``tolerance``, everything else exactly."""
    if _is_tensor(fresh) and _is_tensor(committed):
        head = {k: v for k, v in fresh.items() if k != "data"}
        if head != {k: v for k, v in committed.items() if k != "data"}:
            return [f"tensor {head} vs {committed.get('npy', committed.get('shape'))}"]
        problem = mismatch(
            decode(committed, committed_base), decode(fresh, fresh_base), fresh["dtype"], tolerance
        )
        return [f"{fresh.get('npy', 'inline tensor')}: {problem}"] if problem else []
    if isinstance(fresh, dict) and isinstance(committed, dict):
        if sorted(fresh) != sorted(committed):
            return [f"keys {sorted(fresh)} vs {sorted(committed)}"]
        return [
            d
            for k in fresh
            for d in _differences(fresh[k], committed[k], fresh_base, committed_base, tolerance)
        ]
    if isinstance(fresh, list) and isinstance(committed, list) and len(fresh) == len(committed):
        return [
            d
            for a, b in zip(fresh, committed, strict=True)
            for d in _differences(a, b, fresh_base, committed_base, tolerance)
        ]
    return [] if fresh == committed else [f"{str(fresh)[:80]} vs {str(committed)[:80]}"]


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, dict) and "dtype" in obj and "shape" in obj and ("data" in obj or "npy" in obj)


def test_a_tensor_one_ulp_off_is_current_and_one_beyond_the_tolerance_is_not(tmp_path: Path) -> None:
    """The freshness check itself: a last-bit difference is tolerated, a real change is not."""
    want = {"dtype": "F32", "shape": [2], "data": [1.0, -2.5]}
    off_by_ulp = {**want, "data": [float(np.nextafter(np.float32(1.0), np.float32(2.0))), -2.5]}
    changed = {**want, "data": [1.01, -2.5]}
    table = tolerance_table()
    assert _differences({"w": want}, {"w": off_by_ulp}, tmp_path, tmp_path, table) == []
    assert _differences({"w": want}, {"w": changed}, tmp_path, tmp_path, table) != []
    ints = {"dtype": "I32", "shape": [1], "data": [3]}
    assert _differences(ints, {**ints, "data": [4]}, tmp_path, tmp_path, table) != []


def test_shipped_schemas_are_current() -> None:
    for name, schema in schemas.SCHEMAS.items():
        assert (schemas.KIT / name).read_text() == schemas.render(schema), name


def test_the_protocol_schema_is_a_valid_2020_12_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(
        json.loads(Path(schemas.KIT / "protocol.schema.json").read_text())
    )
