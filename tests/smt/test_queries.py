"""Z3 queries on hand-made programs: each bug yields a witness that replays; fixtures are proved."""

from __future__ import annotations

import pytest

from amkspec.evidence.replay import check_witness
from amkspec.ir import Buffer, BufferKind, DType, MegakernelProgram, ProgramBuilder, Task, load
from amkspec.ir import InstructionKind as K
from amkspec.programs.gallery import EXAMPLES, layered, rule_only_partial_join
from amkspec.smt import Prover, queries, render_dot, render_text
from tests.conftest import FIXTURES

EXPECTED_KIND = {
    "partial-join read race": "read-race",
    "KV cache read before its append": "kv-race",
    "overlapping tiles": "write-race",
    "unsatisfiable threshold": "deadlock",
    "SM-queue deadlock": "deadlock",
    "cycle": "cycle",
    "page clobber": "page-clobber",
    "read of a never-written buffer": "unwritten-read",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_has_its_witness_and_it_replays(name: str) -> None:
    prog = EXAMPLES[name]()
    found = [r.witness for r in Prover(prog).prove_all() if r.witness is not None]
    assert {w.kind for w in found} >= {EXPECTED_KIND[name]}
    for w in found:
        check_witness(prog, w.to_dict(prog))
        assert w.kind in render_text(prog, w)
        assert render_dot(prog, w).startswith("digraph witness {")


def test_unwritten_read_query() -> None:
    prog = EXAMPLES["read of a never-written buffer"]()
    r = Prover(prog).unwritten_read(0, 0)
    assert r.witness is not None
    check_witness(prog, r.witness.to_dict(prog))


def test_no_unwritten_read_witness_for_a_read_of_no_element() -> None:
    """A malformed task's footprint is all of each buffer it names; here that is a zero-element
    ACTIVATION no task writes, so it reads no element and there is no unwritten read to witness
    (found by hypothesis: the query asked Z3 whenever the buffer had no writer, and the witness
    did not replay)."""
    empty = Buffer(id=0, name="empty", kind=BufferKind.ACTIVATION, dtype=DType.F32, shape=(0,))
    task = Task(id=0, op=K.NOP, inputs=[-1, 0], outputs=[], out_counter=0, waits=[], params={})
    prog = MegakernelProgram(buffers=[empty], counters=[], tasks=[task])
    results = Prover(prog).prove_all()
    [read] = [r for r in results if r.kind == "unwritten-read"]
    assert read.witness is None and read.by == queries.NO_GAP
    assert Prover(prog).unwritten_read(0, 0).witness is None


def test_deadlock_witness_names_the_exact_blocking_waits() -> None:
    prog = EXAMPLES["unsatisfiable threshold"]()
    w = Prover(prog).deadlock().witness
    assert w is not None
    [blocked] = w.blocked
    assert blocked.task == 1 and [(x.counter, x.threshold, x.value) for x in blocked.waits] == [(0, 2, 1)]


def test_queue_deadlock_names_the_queue_predecessor() -> None:
    prog = EXAMPLES["SM-queue deadlock"]()
    w = Prover(prog).deadlock().witness
    assert w is not None
    assert {b.task: b.queue_predecessor for b in w.blocked}[1] == 0


def test_targeted_deadlock_completes_the_rest_of_the_program() -> None:
    prog = layered(24, "deadlock")
    prover = Prover(prog)
    last = len(prog.tasks) - 4
    w = prover.deadlock(last).witness
    assert w is not None and {b.task for b in w.blocked} == {last}
    check_witness(prog, w.to_dict(prog))


@pytest.mark.parametrize("fixture", ["toy1L__default.json", "toy2L__splitkv4__pos47.json"])
def test_accepted_fixtures_are_proved(fixture: str) -> None:
    results = Prover(load(FIXTURES / fixture)).prove_all()
    assert results and all(r.proved for r in results)
    assert {"cycle", "deadlock", "read-race", "kv-race"} <= {r.kind for r in results}


def test_prove_all_runs_the_unwritten_read_queries() -> None:
    """A coverage gap (here a half-written activation) is found by ``prove_all`` itself, so an
    accepted program's "every query proved" includes coverage (spec §3.3, R308)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16))
    h = b.new_buffer("h", BufferKind.ACTIVATION, DType.F32, (1, 16))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 16))
    c = b.new_counter("c")
    b.add_task(K.GEMV_TILE, [x, w], [h], out_counter=c, params={"K": 16, "N_tile": 8, "n_off": 0})
    b.add_task(K.COPY, [h], [y], waits=[(c, 1)], label="read_h")
    prog = b.build()
    found = [r.witness for r in Prover(prog).prove_all() if r.witness is not None]
    assert [(w.kind, w.buffers) for w in found] == [("unwritten-read", (h,))]
    check_witness(prog, found[0].to_dict(prog))
    covered = Prover(load(FIXTURES / "toy1L__default.json")).prove_all()
    unwritten = [r for r in covered if r.kind == "unwritten-read"]
    assert unwritten and all(r.proved and r.by == queries.NO_GAP for r in unwritten)


def test_an_empty_program_is_not_proved_by_z3() -> None:
    """No task: the deadlock query makes no Z3 call, so it must not say Z3 decided it."""
    result = Prover(ProgramBuilder().build()).deadlock()
    assert result.proved and result.by == queries.MAXIMAL_RUN


def test_rule_only_partial_join_has_no_bad_execution() -> None:
    assert all(r.proved for r in Prover(rule_only_partial_join()).prove_all())


def test_layered_programs_scale_with_one_bug() -> None:
    prog = layered(200, "race")
    prover = Prover(prog)
    bad = [r for r in prover.prove_all() if not r.proved]
    assert [r.kind for r in bad] == ["read-race"]
    assert bad[0].witness is not None
    check_witness(prog, bad[0].witness.to_dict(prog))
