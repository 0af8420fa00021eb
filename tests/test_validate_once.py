"""A program is validated once per command (spec §3): ``explain``, ``info``, ``evaluate`` and the VMs
take the :class:`~amkspec.proofs.ValidationResult` their caller has, and use it only when it
describes the program they were given."""

from __future__ import annotations

import json
import pickle
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.ir import MegakernelProgram, dumps
from amkspec.proofs import ValidationResult, validate
from amkspec.search import Evaluator
from amkspec.search.examples import racy_prefetch_lowering
from amkspec.smt.explain import explain
from amkspec.vm import ReferenceVM
from amkspec.vm.errors import RefusedProgram
from amkspec.vms import make_vm
from tests.conftest import EXAMPLES

REJECTED = EXAMPLES / "rejected_partial_join.json"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each program (by its canonical JSON) reaches the validator's body."""
    module = sys.modules["amkspec.proofs.validate"]
    seen: Counter[str] = Counter()
    real: Callable[[MegakernelProgram], ValidationResult] = module._validate

    def counting(prog: MegakernelProgram) -> ValidationResult:
        seen[dumps(prog)] += 1
        return real(prog)

    monkeypatch.setattr(module, "_validate", counting)
    return seen


def test_the_explain_of_a_rejected_example_validates_once(calls: Counter[str], tmp_path: Path) -> None:
    html, svg = tmp_path / "r.html", tmp_path / "r.svg"
    result = CliRunner().invoke(main, ["explain", str(REJECTED), "--html", str(html), "--svg", str(svg)])
    assert result.exit_code == 1, result.output
    assert html.exists() and svg.exists()
    assert sum(calls.values()) == 1


def test_explain_given_a_result_does_not_validate_again(calls: Counter[str]) -> None:
    prog = amkspec.load(REJECTED)
    given = validate(prog)
    assert explain(prog, validation=given).verdict == "rejected"
    assert sum(calls.values()) == 1


def test_info_with_a_highlight_validates_once(calls: Counter[str], tmp_path: Path) -> None:
    svg = tmp_path / "g.svg"
    result = CliRunner().invoke(main, ["info", str(REJECTED), "--svg", str(svg), "--highlight", "1"])
    assert result.exit_code == 0, result.output
    assert svg.exists() and "valid: no" in result.output
    assert sum(calls.values()) == 1


def test_evaluate_validates_each_program_once(calls: Counter[str]) -> None:
    """An accepted config: the knob checks' shell and the lowered program, once each (was four calls:
    the shell twice, the program in ``judge`` and again in the ReferenceVM)."""
    verdict = Evaluator("toy", "h100").evaluate(None)
    assert verdict.valid and verdict.correct, verdict
    assert len(calls) == 2 and set(calls.values()) == {1}


def test_a_rejection_with_a_witness_dir_validates_once(calls: Counter[str], tmp_path: Path) -> None:
    """``explain`` of the counterexample reuses ``judge``'s result, carried by the :class:`Rejection`."""
    verdict = Evaluator("toy", "h100", lowering=racy_prefetch_lowering, witness_dir=tmp_path).evaluate(
        {"pipelining_depth": 3}
    )
    assert not verdict.valid and "R303" in verdict.rejected_codes and verdict.witness is not None
    doc = json.loads(Path(verdict.witness).read_text())
    assert any(f["status"] == "witnessed" for f in doc["findings"])
    assert len(calls) == 2 and set(calls.values()) == {1}


def test_a_rejection_carries_its_result_across_processes() -> None:
    """Search workers return rejections to the driver (serial, local pool or Ray): they pickle."""
    ev = Evaluator("toy", "h100", lowering=racy_prefetch_lowering)
    prepared = ev.prepare({"pipelining_depth": 3})
    assert not isinstance(prepared, amkspec.search.Verdict)
    _, rejection = ev.judge(prepared)
    assert rejection is not None and rejection.validation is not None
    back = pickle.loads(pickle.dumps(rejection))
    assert back.validation == rejection.validation and back.diagnostics == rejection.diagnostics


@pytest.mark.parametrize("vm", ["reference", "cpu-kernel"])
def test_a_vm_uses_the_result_it_is_given_only_for_its_program(vm: str, calls: Counter[str]) -> None:
    accepted = amkspec.load(EXAMPLES / "spec_example.json")
    rejected = amkspec.load(REJECTED)
    mine, other = validate(accepted), validate(rejected)
    make_vm(vm, accepted, validation=mine)
    assert sum(calls.values()) == 2  # the two validate() calls above, none by the VM
    make_vm(vm, accepted, validation=other)  # another program's result: the VM validates its own
    assert calls[dumps(accepted)] == 2
    with pytest.raises(RefusedProgram):  # a rejected program is refused, whatever it is handed
        make_vm(vm, rejected, validation=mine)


def test_the_reference_vm_refuses_a_program_its_given_result_rejects() -> None:
    rejected = amkspec.load(REJECTED)
    with pytest.raises(RefusedProgram, match=r"^ReferenceVM refuses"):
        ReferenceVM(rejected, validation=validate(rejected))
