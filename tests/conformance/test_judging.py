"""The kit blames the right party (spec §9.1-§9.4): a reply with values out of their dtype's range
or an absurd shape fails the case with the reason, never crashes the kit; a malformed case file or
``--impl`` text is the user's unusable input (a CaseError or ImplCommandError, exit 2), never a
failure of the implementation; an error path is judged in amkspec's syntax or as a JSON Pointer; a
refusal is judged at the level of the rules that make the program invalid."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from amkspec.conformance.cases import CaseError, default_cases_dir, discover
from amkspec.conformance.client import ImplCommandError
from amkspec.conformance.judge import compare, json_pointer, same_path
from amkspec.conformance.kit import run_kit
from amkspec.conformance.rules import RULES, Level
from amkspec.conformance.tensors import TensorError, decode

CASES_DIR = default_cases_dir()


@pytest.mark.parametrize(
    "tensor",
    [
        {"dtype": "I8", "shape": [2], "data": [1, 254]},
        {"dtype": "I32", "shape": [1], "data": [10**30]},
        {"dtype": "I32", "shape": [10**30], "data": []},
        {"dtype": "F32", "shape": [2**20, 2**20], "data": []},
        {"dtype": "F32", "shape": [True], "data": [1.0]},
        {"dtype": "F32", "shape": [-1], "data": []},
        {"dtype": "F32", "shape": [1], "data": [{"a": 1}]},
    ],
)
def test_a_tensor_out_of_range_is_a_tensor_error(tensor: dict[str, Any]) -> None:
    with pytest.raises(TensorError):
        decode(tensor)


def test_an_out_of_range_output_fails_the_case_with_the_reason() -> None:
    (case,) = discover(CASES_DIR, "run/copy_i8")
    want = case.body["steps"][0]["expect"]["outputs"]["y"]
    expected = decode(want, case.base)
    got = {"dtype": "I8", "shape": list(expected.shape), "data": [254] * expected.size}
    assert "malformed tensor" in compare(got, want, case, case.body["tolerance"])


def _copy_case(tmp_path: Path, case_id: str) -> tuple[Path, dict[str, Any]]:
    (case,) = [c for c in discover(CASES_DIR, case_id) if c.id == case_id]
    root = tmp_path / "cases"
    shutil.copytree(case.base, root / Path(case_id).parent)
    return root / f"{case_id}.json", json.loads(case.path.read_text())


@pytest.mark.parametrize(
    ("case_id", "damage"),
    [
        ("structure/S101_duplicate_counter_id", lambda d: d.pop("expect")),
        ("structure/S101_duplicate_counter_id", lambda d: d.pop("program")),
        ("format/unknown_fields_kept", lambda d: d["expect"].pop("outcome")),
        ("run/copy_i8", lambda d: d["steps"][0].pop("expect")),
        ("run/copy_i8", lambda d: d.pop("tolerance")),
    ],
)
def test_a_malformed_case_file_is_a_case_error_before_any_implementation_runs(
    tmp_path: Path, case_id: str, damage: Any
) -> None:
    path, doc = _copy_case(tmp_path, case_id)
    damage(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(CaseError, match=path.name):
        run_kit("/nonexistent-implementation", tmp_path / "cases")


def test_a_missing_expected_tensor_is_a_case_error() -> None:
    (case,) = discover(CASES_DIR, "run/copy_i8")
    want = {"dtype": "I8", "shape": [1], "npy": "data/no-such-file.npy"}
    with pytest.raises(CaseError, match="expected output"):
        compare({"dtype": "I8", "shape": [1], "data": [1]}, want, case, case.body["tolerance"])


def test_an_expected_tensor_with_a_damaged_npy_header_is_a_tensor_error(tmp_path: Path) -> None:
    """numpy's header parser raises ``tokenize.TokenError`` on a header dict with no closing brace."""
    import numpy as np

    np.save(tmp_path / "good.npy", np.zeros(3, np.float32))
    (tmp_path / "bad.npy").write_bytes((tmp_path / "good.npy").read_bytes().replace(b"}", b" ", 1))
    with pytest.raises(TensorError, match="cannot read"):
        decode({"dtype": "F32", "shape": [3], "npy": "bad.npy"}, tmp_path)


@pytest.mark.parametrize("command", ["", 'python3 "x'])
def test_an_impl_text_that_is_not_a_command_line_is_refused(command: str) -> None:
    with pytest.raises(ImplCommandError):
        run_kit(command, CASES_DIR, select="structure/S101")


@pytest.mark.parametrize(
    ("path", "pointer"),
    [
        ("(root)", ""),
        ("tasks[1].waits[0].threshold", "/tasks/1/waits/0/threshold"),
        ('config.sm_assignment["3a"]', "/config/sm_assignment/3a"),
        ('pages.buffer_to_page["a/b~c"]', "/pages/buffer_to_page/a~1b~0c"),
        ("ir_version", "/ir_version"),
    ],
)
def test_an_error_path_is_accepted_in_amkspecs_syntax_or_as_a_json_pointer(path: str, pointer: str) -> None:
    assert json_pointer(path) == pointer
    assert same_path(path, path) and same_path(pointer, path)
    assert not same_path("tasks[2]", path) and not same_path(None, path)


VM_WITHOUT_VALIDATOR = """
import sys
from amkspec.conformance.adapter import reference_runner, serve
from corpus.broken import RunEverything

class VmOnly(RunEverything):
    def capabilities(self):
        return [c for c in super().capabilities() if c != "validate"]

serve(VmOnly(reference_runner()), sys.stdin, sys.stdout)
"""


def test_a_vm_without_a_validator_is_held_to_the_cases_verdict_at_the_level_of_its_rules() -> None:
    """Without ``validate`` the kit cannot ask the implementation's own verdict, so a run of a program
    the case says is invalid fails EXEC-REFUSE-1 and the rules that make it invalid: at ``core`` only
    where those rules are all core."""
    run = run_kit(shlex.join([sys.executable, "-c", VM_WITHOUT_VALIDATOR]), CASES_DIR, select="refuse/")
    invalid = [r.case for r in run.results if r.case.body["expect"]["outcome"] == "refused"]
    core = {c.id for c in invalid if all(RULES[rid].level is Level.CORE for rid in c.rules)}
    assert core and core != {c.id for c in invalid}
    assert {r.case.id for r in run.results if r.fails_at(Level.CORE)} == core
    assert {r.case.id for r in run.results if r.fails_at(Level.STRICT)} == {c.id for c in invalid}
