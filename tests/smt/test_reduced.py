"""The reduced queries (happens-before first, Z3 on a neighbourhood, the maximal run for deadlock,
peeling for cycles) against the full encoding: same verdict on every query, and a reduced
witness replays on the counter machine whenever the full one does, and on the ReferenceVM too except
for page clobbers, whose query may pick another triple (issue 12)."""

from __future__ import annotations

import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings

from amkspec import load
from amkspec.evidence.replay import ReplayError, check_witness
from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, Task, Wait
from amkspec.programs.families import paged_copy_chain
from amkspec.programs.gallery import layered
from amkspec.programs.strategies import (
    arbitrary_programs,
    mutated_valid_programs,
    sync_programs,
    valid_programs,
)
from amkspec.smt import Prover, Unencodable, queries
from amkspec.smt.encoding import Encoding
from amkspec.smt.explain import explain
from amkspec.smt.queries import QueryResult
from amkspec.smt.witness import Witness
from amkspec.vm.witness import confirm_witness
from tests.conftest import EXAMPLES


def _every_query(p: Prover) -> list[QueryResult]:
    view = p.view
    results = p.prove_all()
    results += [p.deadlock(i) for i in range(len(view.tasks))]
    unwritten = {(o.reader, o.buffer) for o in view.reads if o.unwritten}
    kind = {b.id: b.kind for b in reversed(p.prog.buffers)}  # the first record of an id wins
    fresh = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT)
    unwritten |= {
        (r, b) for b, (rs, ws) in view.buffer_users.items() if kind.get(b) in fresh and not ws for r in rs
    }
    results += [p.unwritten_read(r, b) for r, b in sorted(unwritten)]
    results += [p.read_race(o.reader, o.buffer, [w]) for o in view.reads for w in o.writers]
    return results


def _replays(prog: MegakernelProgram, w: Witness) -> bool:
    try:
        check_witness(prog, w.to_dict(prog))
    except ReplayError:
        return False
    return True


def same_verdicts(prog: MegakernelProgram) -> None:
    try:
        reduced, full = Prover(prog, reduce=True), Prover(prog, reduce=False)
    except Unencodable:
        return
    for r, f in zip(_every_query(reduced), _every_query(full), strict=True):
        assert (r.query, r.kind, r.tasks) == (f.query, f.kind, f.tasks)
        assert r.proved == f.proved, f"{r.query}: reduced {r.witness} but full {f.witness}"
        if r.witness is None or f.witness is None:
            continue
        assert r.witness.kind == f.witness.kind
        if r.witness.kind == "deadlock":  # the stuck state is unique: the maximal run
            assert r.witness.blocked == f.witness.blocked
        if _replays(prog, f.witness):
            check_witness(prog, r.witness.to_dict(prog))
        if r.witness.kind == "page-clobber":
            # a disjunction over (writer, reader, clobberer) triples: either encoding's model may pick
            # any triple, and whether the VM sees the clobber depends on the triple's data
            continue
        if confirm_witness(prog, f.witness.to_dict(prog)) is None:
            assert confirm_witness(prog, r.witness.to_dict(prog)) is None, r.witness


@given(sync_programs(max_tasks=9))
def test_sync_programs(prog: MegakernelProgram) -> None:
    same_verdicts(prog)


@given(mutated_valid_programs())
def test_single_rule_mutations(mutation: tuple[str, MegakernelProgram]) -> None:
    same_verdicts(mutation[1])


@given(valid_programs(max_tasks=10))
def test_valid_programs(prog: MegakernelProgram) -> None:
    same_verdicts(prog)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(arbitrary_programs(max_tasks=6, max_buffers=6))
def test_arbitrary_programs(prog: MegakernelProgram) -> None:
    same_verdicts(prog)


def test_layered_bugs_match_the_full_encoding() -> None:
    for bug in (None, "race", "deadlock"):
        same_verdicts(layered(40, bug))


def test_a_clobber_deep_in_a_chain_keeps_only_the_tasks_it_names() -> None:
    prog = paged_copy_chain(2000)  # a benchmark's program (benchmarks/explain_pages.py)
    p = Prover(prog)
    witnesses = [w for s in p.view.page_shares if (w := p.page_clobber(s).witness) is not None]
    for w in witnesses:
        check_witness(prog, w.to_dict(prog))
    # the clobber task writes the last buffer on page 0 while the second-to-last is still to be read
    assert any(w.roles["clobberer"] == prog.tasks[-1].id for w in witnesses)
    assert any(confirm_witness(prog, w.to_dict(prog)) is None for w in witnesses)
    late = len(prog.tasks) - 2
    enc = Encoding.reduced(p.view, [0, 1, 4, 5, late], p.full.ctx)
    assert enc.hood is not None and enc.hood.kept == {0, 1, 4, 5, late}
    assert enc.hood.frontier[late - 1] == {5}  # the 1,990 tasks between are one summary


def test_a_summarised_task_that_can_never_run_blocks_what_depends_on_it() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    h = b.new_buffer("h", BufferKind.ACTIVATION, DType.F32, (1, 16))
    for c in range(3):
        b.new_counter(f"c{c}")
    b.tasks = [  # t0 and t1 wait for each other; t2 waits for t1
        Task(0, InstructionKind.COPY, [x], [h], 0, [Wait(1, 1)], {}, label="t0"),
        Task(1, InstructionKind.COPY, [x], [h], 1, [Wait(0, 1)], {}, label="t1"),
        Task(2, InstructionKind.COPY, [h], [h], 2, [Wait(1, 1)], {}, label="t2"),
    ]
    prog = b.build()
    p = Prover(prog)
    enc = Encoding.reduced(p.view, [2], p.full.ctx)
    assert enc.hood is not None and enc.hood.kept == {2} and enc.hood.frontier == {0: None, 1: None}
    full = Encoding(p.view)
    full.ensure([2])
    assert enc.check(enc.started(2)) is None and full.check(full.started(2)) is None


def test_each_result_says_what_decided_it_and_explain_never_calls_an_algorithm_z3() -> None:
    prog = load(EXAMPLES / "decoder_layer.json")
    assert len(prog.tasks) <= queries.FULL_ENCODING_MAX_TASKS
    full = Prover(prog).prove_all()  # small: the full encoding
    # coverage has no execution to search: an unwritten-read query without a gap is the footprints'
    assert {r.by for r in full if r.kind != "unwritten-read"} == {queries.Z3}
    assert {r.by for r in full if r.kind == "unwritten-read"} == {queries.NO_GAP}
    reduced = Prover(prog, reduce=True).prove_all()
    assert {queries.HAPPENS_BEFORE, queries.MAXIMAL_RUN, queries.PEELING} <= {r.by for r in reduced}
    proved = [f for f in explain(prog).findings if f.status == "proved"]
    assert {f.kind for f in proved} >= {"unwritten-read", "read-race", "deadlock"}
    for f in proved:
        by = "footprint" if f.kind == "unwritten-read" else "Z3"
        assert f.message.split(" (")[1].startswith(f"{f.queries} by {by}")


def test_above_the_size_bound_explain_reports_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = load(EXAMPLES / "decoder_layer.json")
    monkeypatch.setattr(queries, "FULL_ENCODING_MAX_TASKS", len(prog.tasks) - 1)
    assert Prover(prog).reduce
    messages = [f.message for f in explain(prog).findings if f.status == "proved"]
    assert any("by happens-before" in m for m in messages)
    for m in messages:  # "N queries proved (a by Z3 (UNSAT), b by happens-before, ...)": a + b + ... = N
        total = int(m.split()[0])
        assert sum(int(n) for n in re.findall(r"(\d+) by ", m)) == total


def _clobber_witnessed(prog: MegakernelProgram, reduce_all: bool) -> bool:
    with mock.patch.object(queries, "FULL_ENCODING_MAX_TASKS", 0 if reduce_all else 10**9):
        return any(f.kind == "page-clobber" and f.status == "witnessed" for f in explain(prog).findings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sync_programs(max_tasks=7))
def test_a_clobber_witnessed_on_the_full_encoding_is_witnessed_on_the_reduced_path(
    prog: MegakernelProgram,
) -> None:
    """explain tries each (writer, reader, clobberer) triple when the share's model does not replay."""
    assume(prog.pages is not None)
    if _clobber_witnessed(prog, reduce_all=False):
        assert _clobber_witnessed(prog, reduce_all=True)


def test_a_clobber_whose_first_model_does_not_replay_is_witnessed_by_another_triple() -> None:
    """Found by the property test above: on the reduced path Z3's model for the whole page share
    does not replay on the ReferenceVM, one of its triples alone does."""
    prog = load(Path(__file__).parent / "data" / "clobber_needs_another_triple.json")
    assert _clobber_witnessed(prog, reduce_all=False)
    assert _clobber_witnessed(prog, reduce_all=True)
