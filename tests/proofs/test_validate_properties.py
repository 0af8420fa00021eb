"""Property tests of the validator (issue 3 item 5): it never raises, accepts programs that are
valid by construction, its fast paths agree with the detailed checks, its reachability answers
agree with brute force, its SM-queue verdict agrees with executing the queues, and no interleaving
of an accepted program races or blocks."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import (
    BufferKind,
    DType,
    FormatError,
    InstructionKind,
    MegakernelProgram,
    ProgramBuilder,
    VersionError,
    Wait,
    loads,
)
from amkspec.programs.strategies import arbitrary_programs, mutated_documents, valid_programs
from amkspec.proofs import validate
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.reach import Reachability
from amkspec.proofs.structure import check_task, scan_tasks


@given(arbitrary_programs())
def test_never_raises_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert "S199" not in result.codes, result.report()
    assert result.ok is (result.errors == [])


UNHASHABLE_KINDS = {"list": ["IO_OUTPUT"], "dict": {}, "tuple of a list": (BufferKind.WEIGHT, [])}


@pytest.mark.parametrize("kind", UNHASHABLE_KINDS.values(), ids=UNHASHABLE_KINDS.keys())
def test_an_unhashable_buffer_kind_is_reported_not_raised(kind: object) -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", kind, DType.F32, (1, 4), source="y")  # type: ignore[arg-type]
    b.add_task(InstructionKind.COPY, [x], [y], label="copy")
    result = validate(b.build())
    assert not result.ok and "S199" not in result.codes, result.report()
    assert result.stats["weight_MB"] == 0


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
    # A FUSED recipe is not marshalled into the ABI param table: S112 warns about it (by design).
    findings = [d for d in result.diagnostics if not (d.code == "S112" and "'recipe'" in d.message)]
    assert result.ok and findings == [], result.report()


@given(valid_programs(max_tasks=10, permute_ids=True))
def test_ids_that_are_not_positions_are_the_only_finding(prog: MegakernelProgram) -> None:
    assert set(validate(prog).codes) <= {"S102", "S112"}  # S112: FUSED recipes are not marshalled


@given(arbitrary_programs())
def test_task_fast_path_agrees_with_the_detailed_check(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    unclean = set(scan_tasks(ix).unclean)
    for pos in range(ix.n):
        assert (pos not in unclean) == (list(check_task(ix, pos)) == [])


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


@st.composite
def small_dataflow_programs(draw: st.DrawFn) -> MegakernelProgram:
    """COPY/ADD tasks that mostly wait for the writers of what they read, with occasional missing
    or partial waits, shared counters, rewritten buffers and SM assignments: near-valid programs."""
    b = ProgramBuilder()
    src = b.new_buffer("src", BufferKind.IO_INPUT, DType.F32, (1, 4))
    writer_of: dict[int, list[int]] = {src: []}
    for i in range(draw(st.integers(1, 7))):
        ins = draw(st.lists(st.sampled_from(sorted(writer_of)), min_size=1, max_size=2))
        if draw(st.integers(0, 4)) == 0 and len(writer_of) > 1:
            out = draw(st.sampled_from(sorted(writer_of)[1:]))
        else:
            out = b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, 4))
        deps = {w for bid in ins for w in writer_of[bid] if draw(st.integers(0, 7))}
        counters = sorted({b.tasks[w].out_counter for w in deps})
        if b.tasks and not draw(st.integers(0, 5)):
            counters.append(b.tasks[draw(st.integers(0, len(b.tasks) - 1))].out_counter)
        shared = b.tasks and not draw(st.integers(0, 3))
        oc = b.tasks[-1].out_counter if shared else None
        t = b.add_task(
            InstructionKind.COPY if len(ins) == 1 else InstructionKind.ADD,
            ins,
            [out],
            oc,
            waits=[b.join(c) for c in counters],
            sm=draw(st.sampled_from([None, None, 0, 1])),
        )
        writer_of.setdefault(out, []).append(t)
    if draw(st.booleans()):  # re-join: later producers of a shared counter join earlier waits
        for task in b.tasks:
            for wait in task.waits:
                wait.threshold = max(1, sum(1 for t in b.tasks if t.out_counter == wait.counter))
    return b.build()


def _random_run(prog: MegakernelProgram, rng: st.DataObject) -> str | None:
    """One interleaving of start/end events; the first violation seen, or None."""
    value = dict.fromkeys(range(len(prog.counters)), 0)
    writers = {bid: {t.id for t in prog.tasks if bid in t.outputs} for bid in range(len(prog.buffers))}
    started: set[int] = set()
    running: set[int] = set()
    ended: set[int] = set()
    while len(ended) < len(prog.tasks):
        ready = [
            t
            for t in prog.tasks
            if t.id not in started
            and all(value[w.counter] >= w.threshold for w in t.waits)
            and not any(u.sm == t.sm and u.id not in ended for u in prog.tasks[: t.id] if t.sm is not None)
        ]
        moves = [("start", t.id) for t in ready] + [("end", i) for i in sorted(running)]
        if not moves:
            return "deadlock"
        kind, i = rng.draw(st.sampled_from(moves))
        task = prog.tasks[i]
        if kind == "start":
            for bid in task.inputs:
                if prog.buffers[bid].kind is BufferKind.ACTIVATION and writers[bid] - {i} - ended:
                    return f"task {i} reads {bid} before a writer ends"
            for bid in task.outputs:
                if any(bid in prog.tasks[j].outputs for j in running):
                    return f"task {i} writes {bid} while another writer runs"
            started.add(i)
            running.add(i)
        else:
            running.discard(i)
            ended.add(i)
            value[task.out_counter] += 1
    return None


@given(small_dataflow_programs(), st.data())
def test_accepted_programs_never_race_or_block(prog: MegakernelProgram, data: st.DataObject) -> None:
    """Soundness: an interleaving of an accepted program never reads unfinished data, never runs two
    writers of a buffer at once, and never gets stuck."""
    if validate(prog).ok:
        for _ in range(3):
            assert _random_run(prog, data) is None
