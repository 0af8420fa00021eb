"""Property tests of the validator (issue 3 item 5): it never raises, accepts programs that are
valid by construction, its fast paths agree with the detailed checks, its reachability answers
agree with brute force, and its SM-queue verdict agrees with executing the queues."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import (
    FormatError,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    VersionError,
    Wait,
    loads,
)
from amkspec.proofs import validate
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.reach import Reachability
from amkspec.proofs.structure import check_task, task_is_clean
from amkspec.strategies import arbitrary_programs, mutated_documents, valid_programs


@given(arbitrary_programs())
def test_never_raises_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert "S199" not in result.codes, result.report()
    assert result.ok is (result.errors == [])


@given(mutated_documents())
def test_never_raises_on_loadable_mutated_documents(doc: object) -> None:
    try:
        prog = loads(json.dumps(doc))
    except (FormatError, VersionError):
        return
    assert "S199" not in validate(prog).codes


@given(valid_programs(max_tasks=16))
def test_valid_by_construction_is_accepted_without_findings(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert result.ok and result.diagnostics == [], result.report()


@given(valid_programs(max_tasks=10, permute_ids=True))
def test_ids_that_are_not_positions_are_the_only_finding(prog: MegakernelProgram) -> None:
    assert set(validate(prog).codes) <= {"S102"}


@given(arbitrary_programs())
def test_task_fast_path_agrees_with_the_detailed_check(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    for pos, task in enumerate(ix.tasks):
        assert task_is_clean(task, ix) == (list(check_task(ix, pos)) == [])


@st.composite
def dags(draw: st.DrawFn) -> list[list[int]]:
    n = draw(st.integers(1, 40))
    return [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else [] for i in range(n)]


@given(dags(), st.data())
def test_reachability_agrees_with_brute_force(preds: list[list[int]], data: st.DataObject) -> None:
    n = len(preds)
    perm = data.draw(st.permutations(range(n)))  # positions need not be topologically sorted
    relabel = {old: new for new, old in enumerate(perm)}
    new_preds: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        new_preds[relabel[v]] = sorted(relabel[p] for p in ps)
    anc: list[set[int]] = [set() for _ in range(n)]
    for v in range(n):  # original labels are topological
        for p in preds[v]:
            anc[relabel[v]] |= anc[relabel[p]] | {relabel[p]}
    topo = [relabel[v] for v in range(n)]
    pairs = [(a, b) for a in range(n) for b in range(n)]
    reach = Reachability(new_preds, topo)
    assert reach.ancestors(pairs) == {(a, b) for a, b in pairs if a in anc[b]}


@st.composite
def queued_programs(draw: st.DrawFn) -> MegakernelProgram:
    """NOP tasks with all-join waits on arbitrary (also later) tasks and SMs in {None, 0, 1}."""
    n = draw(st.integers(2, 8))
    b = ProgramBuilder()
    counters = [b.new_counter() for _ in range(n)]
    for i in range(n):
        others = [j for j in range(n) if j != i]
        targets = draw(st.sets(st.sampled_from(others), max_size=2))
        b.add_task(
            InstructionKind.NOP,
            [],
            [],
            out_counter=counters[i],
            waits=[(counters[j], 1) for j in targets],
            sm=draw(st.sampled_from([None, 0, 1])),
        )
    return b.build()


def _runs_to_completion(prog: MegakernelProgram) -> bool:
    """Execute: a task fires when its waits hold and it heads its SM queue (task-list order)."""
    done: set[int] = set()
    value = dict.fromkeys(range(len(prog.tasks)), 0)
    progress = True
    while progress:
        progress = False
        for t in prog.tasks:
            if t.id in done or any(value[w.counter] < w.threshold for w in t.waits):
                continue
            if t.sm is not None and any(u.sm == t.sm and u.id not in done for u in prog.tasks[: t.id]):
                continue
            done.add(t.id)
            value[t.out_counter] += 1
            progress = True
    return len(done) == len(prog.tasks)


@given(queued_programs())
def test_sm_queue_verdict_matches_execution(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert result.ok is _runs_to_completion(prog), result.report()


def _mutate_init(prog: MegakernelProgram, pick: int) -> str | None:
    prog.counters[pick % len(prog.counters)].init = 1
    return "S103"


def _mutate_threshold_zero(prog: MegakernelProgram, pick: int) -> str | None:
    waiting = [t for t in prog.tasks if t.waits]
    if not waiting:
        return None
    waiting[pick % len(waiting)].waits[0].threshold = 0
    return "S108"


def _mutate_self_wait(prog: MegakernelProgram, pick: int) -> str | None:
    task = prog.tasks[pick % len(prog.tasks)]
    task.waits.append(Wait(task.out_counter, 1))
    return "D203"


def _mutate_threshold_high(prog: MegakernelProgram, pick: int) -> str | None:
    waiting = [t for t in prog.tasks if t.waits]
    if not waiting:
        return None
    wait = waiting[pick % len(waiting)].waits[0]
    wait.threshold = sum(1 for t in prog.tasks if t.out_counter == wait.counter) + 1
    return "D202"


def _mutate_drop_waits(prog: MegakernelProgram, pick: int) -> str | None:
    """A reader of a buffer written by another task loses all its waits: it races."""
    writers = {b: t.id for t in prog.tasks for b in t.outputs}
    readers = [t for t in prog.tasks if any(writers.get(b, t.id) != t.id for b in t.inputs)]
    if not readers:
        return None
    readers[pick % len(readers)].waits = []
    return "R3"


MUTATORS = [
    _mutate_init,
    _mutate_threshold_zero,
    _mutate_self_wait,
    _mutate_threshold_high,
    _mutate_drop_waits,
]


@given(valid_programs(max_tasks=12), st.sampled_from(MUTATORS), st.integers(0, 1000))
def test_single_mutations_of_valid_programs_are_rejected_with_their_code(
    prog: MegakernelProgram, mutate: Callable[[MegakernelProgram, int], str | None], pick: int
) -> None:
    expected = mutate(prog, pick)
    if expected is None:
        return
    result = validate(prog)
    assert not result.ok and any(code.startswith(expected) for code in result.codes), result.report()
