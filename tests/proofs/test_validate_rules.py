"""Every rule of the validator, one single-rule mutation of a small valid program each: the mutated
program gives exactly that code and its near miss gives none (spec §3; the same catalogue generates
the conformance cases). Plus the rules whose behaviour is more than a code: messages name ids, the
stricter-than-the-original rules, and checks that run at any size."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Wait
from amkspec.proofs import CODES, Severity, validate
from corpus import make_cases
from tests.conftest import ROOT

CASES = make_cases
K = InstructionKind


def test_base_program_is_valid() -> None:
    result = validate(CASES.base_program())
    assert result.ok and result.diagnostics == []


@pytest.mark.parametrize("entry", CASES.CATALOGUE, ids=lambda e: f"{e[0]}_{e[1]}")
def test_mutation_gives_exactly_its_code(entry: tuple) -> None:  # type: ignore[type-arg]
    code, _slug, _what, trigger, near, _near_what = entry
    bad = CASES.base_program()
    trigger(bad)
    result = validate(bad)
    assert result.codes == [code], result.report()
    assert result.ok is (CODES[code].severity is Severity.WARNING)
    good = CASES.base_program()
    near(good)
    near_result = validate(good)
    assert near_result.ok and near_result.codes == [], near_result.report()


def test_every_own_code_is_in_the_catalogue() -> None:
    covered = {entry[0] for entry in CASES.CATALOGUE}
    own = {c for c in CODES if c[0] in "SDRO"} - {"S199"}
    assert own - covered == set()


def test_messages_name_tasks_counters_and_producers() -> None:
    prog = CASES.base_program()
    prog.tasks[3].waits[1].threshold = 1
    (d,) = validate(prog).diagnostics
    assert d.code == "R301" and d.tasks == (3, 1, 2) and d.counters == (1,)
    assert "task 3:residual waits on counter 1 with threshold 1" in d.message
    assert "2 producers (1:proj[t0], 2:proj[t1])" in d.message


def test_cycle_witness_is_a_path() -> None:
    prog = CASES.base_program()
    prog.tasks[0].waits.append(Wait(2, 1))
    (d,) = validate(prog).diagnostics
    assert d.message == "cycle: 0:embed -> 1:proj[t0] -> 3:residual -> 0:embed"


def test_ids_not_positions_never_crash() -> None:
    prog = CASES.base_program()
    for i, t in enumerate(prog.tasks):
        t.id = 10 + i
    result = validate(prog)
    assert not result.ok and set(result.codes) == {"S102"}
    assert "S199" not in result.codes


def test_reversed_task_list_is_still_judged_by_dependencies() -> None:
    prog = CASES.base_program()
    prog.tasks.reverse()
    result = validate(prog)
    assert set(result.codes) == {"S102"}, result.report()


def _chain(n: int) -> MegakernelProgram:
    """A chain of ``n`` COPY tasks from an IO_INPUT to an IO_OUTPUT."""
    b = ProgramBuilder()
    prev = b.new_buffer("src", BufferKind.IO_INPUT, DType.F32, (1, 4))
    for i in range(n):
        kind = BufferKind.IO_OUTPUT if i == n - 1 else BufferKind.ACTIVATION
        nxt = b.new_buffer(f"a{i}", kind, DType.F32, (1, 4))
        b.add_task(K.COPY, [prev], [nxt], waits=[b.after(i - 1)] if i else [], label=f"c{i}")
        prev = nxt
    return b.build()


def test_no_task_count_cap() -> None:
    """The original skips its race checks above 8000 tasks; ours finds a race at any size."""
    prog = _chain(9000)
    assert validate(prog).ok
    prog.tasks[-1].waits = []
    result = validate(prog)
    assert "R303" in result.codes and result.stats["tasks"] == 9000


def test_transitive_reads_need_reachability_queries() -> None:
    prog = _chain(50)
    last = prog.tasks[-1]
    last.inputs = [prog.tasks[0].outputs[0], *last.inputs]
    last.op = K.ADD
    result = validate(prog)
    assert result.ok, result.report()
    assert result.stats["reach_queries"] >= 1 and result.stats["bitset_passes"] >= 1


def test_internal_errors_become_s199(monkeypatch: pytest.MonkeyPatch) -> None:
    v = importlib.import_module("amkspec.proofs.validate")

    def boom(ix: object) -> list:  # type: ignore[type-arg]
        raise RuntimeError("boom")

    monkeypatch.setattr(v, "CHECKS", (("boom", boom), *v.CHECKS[1:]))
    result = validate(CASES.base_program())
    assert not result.ok and result.codes == ["S199"]
    assert "internal error in the boom check: RuntimeError: boom" in result.errors[0]


def test_report_groups_by_spec_section() -> None:
    prog = CASES.base_program()
    prog.counters[0].init = 1
    prog.tasks[3].waits[1].threshold = 1
    prog.meta["gpu"] = "a100"
    result = validate(prog)
    text = result.report()
    assert text.splitlines()[0].startswith("REJECTED: 2 error(s), 1 warning(s)")
    assert text.index("§3.1 structure") < text.index("§3.3 race-freedom") < text.index("§3.5 outputs")
    data = result.to_dict()
    assert data["verdict"] == "rejected" and data["codes"] == ["S103", "R301", "O502"]
    assert [d["code"] for d in data["diagnostics"]] == data["codes"]
    assert result.errors[0].startswith("S103 counter 0 has init 1")


def test_validator_needs_neither_torch_nor_z3() -> None:
    code = (
        "import sys, amkspec; amkspec.validate(amkspec.MegakernelProgram()); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'z3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
