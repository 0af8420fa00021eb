"""Per-SM queues (spec §8.3): placement by load counting pinned tasks, and one global order G."""

from __future__ import annotations

import attrs
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.programs.strategies import valid_programs
from vm_cuda.queues import QueueError, build_queues, global_order


def _two_copies(pinned_first: bool) -> MegakernelProgram:
    """A huge task pinned to SM 0 and a small free one (the pinned one first or last in G)."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (1, 4))
    big = (InstructionKind.COPY, [x], [y])
    if pinned_first:
        b.add_task(*big, label="big_pinned", sm=0, est_bytes=10**9)
        b.add_task(InstructionKind.COPY, [x], [z], label="small_free", est_bytes=16)
    else:  # the pinned task consumes the free one's output, so it comes later in G
        b.add_task(InstructionKind.COPY, [x], [z], label="small_free", est_bytes=16)
        b.add_task(InstructionKind.COPY, [z], [y], label="big_pinned", sm=0, est_bytes=10**9)
    return b.build()


def test_a_free_task_avoids_the_sm_of_a_heavy_pinned_task() -> None:
    assert build_queues(_two_copies(pinned_first=True), 2) == [[0], [1]]


def test_pinned_load_counts_even_when_the_pinned_task_comes_later_in_g() -> None:
    assert build_queues(_two_copies(pinned_first=False), 2) == [[1], [0]]


@st.composite
def mixed_placement(draw: st.DrawFn) -> tuple[MegakernelProgram, int]:
    """A valid program with some tasks pinned, random ``est_bytes``, and a grid of 1..5 SMs."""
    program = draw(valid_programs(max_tasks=12, assign_sms=False))
    num_sms = draw(st.integers(1, 5))
    tasks = [
        attrs.evolve(t, sm=draw(st.none() | st.integers(0, num_sms - 1)), est_bytes=draw(st.integers(0, 500)))
        for t in program.tasks
    ]
    program = attrs.evolve(program, tasks=tasks)
    try:
        global_order(program)
    except QueueError:  # pinning made the per-SM order contradict a dependency
        assume(False)
    return program, num_sms


@settings(max_examples=40)
@given(mixed_placement())
def test_every_free_task_goes_to_a_least_loaded_sm(case: tuple[MegakernelProgram, int]) -> None:
    """Replaying G: each free task's SM had the least (load, task count) when it was placed, and
    every queue is a subsequence of G (so §8.3's deadlock-freedom argument applies)."""
    program, num_sms = case
    queues = build_queues(program, num_sms)
    where = {i: sm for sm, q in enumerate(queues) for i in q}
    order = global_order(program)
    assert sorted(where) == list(range(len(program.tasks)))
    rank = {i: k for k, i in enumerate(order)}
    assert all(q == sorted(q, key=rank.__getitem__) for q in queues)
    load, count = [0] * num_sms, [0] * num_sms
    for t in program.tasks:
        if t.sm is not None:
            load[t.sm] += t.est_bytes
            count[t.sm] += 1
    for i in order:
        task = program.tasks[i]
        if task.sm is not None:
            assert where[i] == task.sm
            continue
        sm = where[i]
        assert all((load[sm], count[sm]) <= (load[o], count[o]) for o in range(num_sms)), (i, load, count)
        load[sm] += task.est_bytes
        count[sm] += 1
