"""``explain()`` labels each rejection witnessed or rule-only, and proves accepted programs."""

from __future__ import annotations

import json

import pytest

from amkspec.evidence.replay import check_witness
from amkspec.ir import load
from amkspec.programs.gallery import EXAMPLES, rule_only_partial_join
from amkspec.smt.explain import explain
from tests.conftest import FIXTURES


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_rejection_is_witnessed_and_replays(name: str) -> None:
    prog = EXAMPLES[name]()
    result = explain(prog)
    assert result.verdict == "rejected"
    assert result.findings and all(f.status == "witnessed" for f in result.findings)
    data = json.loads(json.dumps(result.to_dict(prog)))
    for f in data["findings"]:
        assert set(f) >= {"code", "clause", "status", "kind", "tasks", "witness"}
        check_witness(prog, f["witness"])


def test_rule_only_rejection() -> None:
    result = explain(rule_only_partial_join())
    [finding] = result.findings
    assert (finding.code, finding.status, finding.witness) == ("R301", "rule-only", None)
    assert result.rule_only == 1 and result.witnessed == 0


def test_accepted_program_is_proved_per_query_kind() -> None:
    prog = load(FIXTURES / "toy1L__default.json")
    result = explain(prog)
    assert result.verdict == "accepted"
    assert {f.status for f in result.findings} == {"proved"}
    kinds = {f.kind: f.queries for f in result.findings}
    assert kinds["read-race"] > 10 and kinds["deadlock"] == 1
    assert result.to_dict(prog)["findings"][0]["witness"] is None


def test_structural_rejections_are_rule_only() -> None:
    prog = EXAMPLES["cycle"]()
    prog.tasks[1].id = 0  # two tasks with one id: executions are not defined
    result = explain(prog)
    assert result.verdict == "rejected" and {f.status for f in result.findings} == {"rule-only"}
