"""The exhaustive small-scope check (:mod:`amkspec.evidence.exhaustive`) and the agreement rule it
shares with ``tools/random_agreement.py``: its counting, its symmetry reduction, a CI slice of the
domain, and the disagreements found so far as regression tests (issue 9). Sharding, checkpoints,
witnesses and executors: ``test_exhaustive_check.py``."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.evidence.exhaustive.agreement import _explained, compare, error_codes, joined
from amkspec.evidence.exhaustive.check import check as check_exhaustively
from amkspec.evidence.exhaustive.domain import Bound, Domain, Program, _rename_head, _rename_shape, build
from amkspec.evidence.model_check import Finding, check
from amkspec.ir import MegakernelProgram, Wait, loads
from amkspec.proofs import validate

# -- counting and symmetry reduction ---------------------------------------------------------------

SMALL = [
    Bound(buffers=1, counters=2, threshold=1, init=True),
    Bound(buffers=2, counters=1, threshold=1, sm=True),
    Bound(buffers=2, counters=1, threshold=1, pages=True),
]
"""Counter renaming and init; buffer renaming and SM queues; pages. The main domain's Burnside
counts are checked against its enumeration by the CI slice below."""


def _key(domain: Domain, p: Program) -> tuple[object, ...]:
    """The least image of ``p`` under every symmetry (renamings, mirror, task order, SM swap)."""
    kinds, inits, paged, tasks = p
    images = []
    for g in domain.group:
        head = _rename_head((kinds, inits, paged), g)
        moved = [(*_rename_shape(t[:5], g), t[5]) for t in tasks]  # type: ignore[arg-type]
        if domain.bound.sm:
            for swap in (False, True):
                queues = [tuple(t[:5] for t in moved if t[5] == (sm ^ swap)) for sm in (0, 1)]
                images.append((head, tuple(queues)))
        else:
            images.append((head, tuple(sorted(moved))))
    return min(images)


@pytest.mark.parametrize("bound", SMALL, ids=str)
def test_one_representative_per_class_and_burnside_counts_them(bound: Bound) -> None:
    domain = Domain(bound)
    for n in (1, 2):
        reps = list(domain.programs(n))
        keys = {_key(domain, p) for p in reps}
        assert len(keys) == len(reps) == domain.size(n)[1]
        # every program of the unreduced domain (any task order, any SM split) has a representative
        raw = 0
        for head in domain.heads:
            sms = (0, 1) if bound.sm else (-1,)
            for tasks in itertools.product([(*s, sm) for s in domain.shapes for sm in sms], repeat=n):
                raw += 1
                assert _key(domain, (*head, tasks)) in keys
        expected = len(domain.heads) * (len(domain.shapes) * len(sms)) ** n
        assert raw == expected
        assert domain.size(n)[0] <= raw


def _random_image(domain: Domain, p: Program, rng: random.Random) -> Program:
    """``p`` under a random symmetry, with its tasks in a random order that keeps each SM queue."""
    kinds, inits, paged, tasks = p
    g = rng.choice(domain.group)
    swap = domain.bound.sm and rng.random() < 0.5
    moved = [(*_rename_shape(t[:5], g), t[5] ^ swap if t[5] >= 0 else -1) for t in tasks]  # type: ignore[arg-type]
    if domain.bound.sm:  # a random interleaving of the two SM queues, each kept in its order
        queues = {sm: [i for i, t in enumerate(moved) if t[5] == sm] for sm in (0, 1)}
        labels = [t[5] for t in moved]
        rng.shuffle(labels)
        order = [queues[sm].pop(0) for sm in labels]
    else:
        order = list(range(len(moved)))
        rng.shuffle(order)
    return (*_rename_head((kinds, inits, paged), g), tuple(moved[i] for i in order))  # type: ignore[return-value]


def _verdicts(prog: MegakernelProgram) -> tuple[set[str], set[str]]:
    return error_codes(prog), check(prog).kinds()


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([Bound(sm=True, pages=True, init=True), Bound(threshold=2)]),
    st.integers(2, 4),
    st.randoms(),
)
def test_symmetries_change_neither_codes_nor_findings(bound: Bound, n: int, rng: random.Random) -> None:
    """The symmetry argument of the reduction, checked on the code: validate's error codes and the
    model checker's finding kinds are the same on a program and on any of its images."""
    domain = Domain(bound)
    sms = (0, 1) if bound.sm else (-1,)
    p = (*rng.choice(domain.heads), tuple((*rng.choice(domain.shapes), rng.choice(sms)) for _ in range(n)))
    assert _verdicts(build(p)) == _verdicts(build(_random_image(domain, p, rng)))  # type: ignore[arg-type]


# -- the CI slice ----------------------------------------------------------------------------------

SLICES = [
    Bound(tasks=2, buffers=2, counters=2, threshold=2),
    Bound(tasks=2, buffers=2, counters=1, threshold=2, sm=True),
    Bound(tasks=2, buffers=2, counters=1, threshold=2, init=True, pages=True),
]
"""Every class of 2 tasks of the main domain (66,582), with SM queues (11,097) and with pages and
counter init (8,478): about 30 s on a quiet machine. The long runs are ``amkspec check-validator``."""


@pytest.mark.parametrize("bound", SLICES, ids=str)
def test_validate_agrees_with_the_model_checker_on_every_two_task_program(bound: Bound) -> None:
    report = check_exhaustively(bound)
    assert report.complete == bound.tasks, "the slice must be checked completely"
    assert report.checked_now == sum(Domain(bound).size(n)[1] for n in (1, 2))
    first = report.disagreements[0] if report.disagreements else {}
    assert not report.disagreements, f"{first['reason']}\n{first['program']}"


# -- the agreement rule and the disagreements found ------------------------------------------------

X, W, ACT, OUT = -1, 1, 0, 1


def test_unfenced_page_caused_by_a_partial_wait_is_reported_by_r301() -> None:
    """The disagreement of the 10k random run (a shared counter, a partial wait, SM queues and a
    page), reduced: tiles t0 (SM 0) and t1 (SM 1) write b0 and signal c0; t2 (SM 0) waits for 1
    of the 2 and copies b0 to an output; t3 (SM 1, after t1) waits for t2 and writes b1, which
    shares b0's page. If t2 starts before t1 ends, t1's write is never released to t3: an
    unfenced page. validate reports the partial wait (R301) and reasons as if it were the full
    join, under which the page is fenced; so R301 explains the finding."""
    prog = build(
        (
            (ACT, ACT, OUT),
            (0, 0, 0),
            True,
            (
                (X, 0, 0, 0, (0, 0, 0), 0),
                (X, 0, 1, 0, (0, 0, 0), 1),
                (0, 2, -1, 1, (1, 0, 0), 0),
                (X, 1, -1, 2, (0, 1, 0), 1),
            ),
        )
    )
    assert error_codes(prog) == {"R301"}
    assert check(prog).kinds() == {"read-race", "unfenced-page"}
    assert check(joined(prog)).kinds() == set()
    assert error_codes(joined(prog)) == set()
    assert compare(prog) is None


def test_a_finding_the_partial_wait_does_not_cause_needs_its_own_code() -> None:
    """R301 explains only what the full join removes: with an unwaited reader added, the read race
    remains in the joined program, and validate must (and does) report it with R303."""
    prog = build(
        (
            (ACT, OUT, OUT),
            (0, 0, 0),
            False,
            (
                (X, 0, 0, 0, (0, 0, 0), -1),
                (X, 0, 1, 0, (0, 0, 0), -1),
                (0, 1, -1, 1, (1, 0, 0), -1),
                (0, 2, -1, 2, (0, 0, 0), -1),
            ),
        )
    )
    assert "read-race" in check(joined(prog)).kinds()
    assert {"R301", "R303"} <= error_codes(prog)
    assert compare(prog) is None


def test_a_page_clobber_by_an_unordered_reader_is_reported_by_r303() -> None:
    """Exhaustive run with pages: t1 reads b0 before t0 (which waits for t1) writes it, and writes
    b1 on the same page. validate reports the read (R303 naming t1 and b0) and orders the page's
    occupants by their writers (b1, then b0), so R311 does not fire; once the read is ordered
    after its writer, R311 does."""
    bad = build(((ACT, ACT), (0, 0), True, ((X, 0, -1, 0, (0, 1), -1), (0, 1, -1, 1, (0, 0), -1))))
    finding = next(f for f in check(bad).findings if f.kind == "page-clobber")
    assert finding.tasks == (1,) and finding.buffer == 2
    assert error_codes(bad) == {"R303"}
    assert compare(bad) is None
    fixed = build(((ACT, ACT), (0, 0), True, ((X, 0, -1, 0, (0, 0), -1), (0, 1, -1, 1, (1, 0), -1))))
    assert "page-clobber" in check(fixed).kinds()
    assert error_codes(fixed) == {"R311"}


def test_an_unordered_read_explains_only_its_own_tasks_clobber() -> None:
    bad = build(((ACT, ACT), (0, 0), True, ((X, 0, -1, 0, (0, 1), -1), (0, 1, -1, 1, (0, 0), -1))))
    errors = [d for d in validate(bad).diagnostics if d.code == "R303"]
    assert _explained(Finding("page-clobber", (1,), 2, ()), {"R303"}, errors)
    assert not _explained(Finding("page-clobber", (0,), 2, ()), {"R303"}, errors)
    assert not _explained(Finding("page-clobber", (1,), 3, ()), {"R303"}, errors)
    assert not _explained(Finding("page-clobber", (), 2, ()), {"R303"}, errors)


def test_a_cycle_a_partial_wait_lets_run_is_rule_only() -> None:
    """Exhaustive run, 3 tasks: t0 and t1 signal c0, t2 waits for one of them, t1 waits for t2. The
    graph has a cycle (D204, a MUST of spec §1) but every execution runs t0, t2, t1 in order, fenced:
    the model checker finds nothing, and D204 is a rule-only rejection."""
    prog = build(
        (
            (ACT, ACT),
            (0, 0),
            False,
            ((X, 0, -1, 0, (0, 0), -1), (X, 0, -1, 0, (0, 1), -1), (X, 0, -1, 1, (1, 0), -1)),
        )
    )
    assert error_codes(prog) == {"D204", "R301"}
    assert check(prog).findings == ()
    assert compare(prog) is None


def test_joined_raises_only_the_waits_r301_rejects() -> None:
    prog = build(
        (
            (ACT, OUT),
            (0, 0),
            False,
            ((X, 0, 0, 0, (0, 0), -1), (X, 0, 1, 0, (0, 0), -1), (0, 1, -1, 1, (1, 0), -1)),
        )
    )
    prog.tasks[2].waits.append(Wait(1, 1))  # a self-wait (D203), not R301's business
    assert [(w.counter, w.threshold) for w in joined(prog).tasks[2].waits] == [(0, 2), (1, 1)]
    assert [(w.counter, w.threshold) for w in prog.tasks[2].waits] == [(0, 1), (1, 1)]


COVERAGE_GAP = """{"buffers": [
 {"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F32", "shape": [1, 2]},
 {"id": 1, "name": "W", "kind": "WEIGHT", "dtype": "F32", "shape": [2, 2]},
 {"id": 2, "name": "b0", "kind": "ACTIVATION", "dtype": "F32", "shape": [1, 2]}],
 "counters": [{"id": 0}, {"id": 1}],
 "tasks": [
 {"id": 0, "op": "GEMV_TILE", "inputs": [0, 1], "outputs": [2], "out_counter": 0,
  "params": {"K": 2, "N_tile": 1, "n_off": 0}},
 {"id": 1, "op": "COPY", "inputs": [2], "outputs": [2], "out_counter": 1,
  "waits": [{"counter": 0, "threshold": 1}]}]}"""


def test_coverage_gap_found_by_the_first_exhaustive_run() -> None:
    """Task 1 reads column 1 of b0, which only task 1 itself writes (after reading it): once
    accepted by validate, now rejected (R308) as the model checker's unwritten read demands."""
    prog = loads(COVERAGE_GAP)
    assert "unwritten-read" in check(prog).kinds()
    assert "R308" in error_codes(prog) or "R304" in error_codes(prog)
    assert compare(prog) is None
