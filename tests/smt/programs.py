"""Small synchronisation-heavy programs for the SMT cross-checks (test helper, not public API).

Shapes are always sound (every buffer is F32 ``[1, 16]``), so what varies is
exactly what the execution model cares about: out_counters shared or not,
waits and thresholds (sometimes partial, too high or cyclic), SM queues,
which tasks read and write which activations, GEMV column tiles and pages.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from amkspec.ir import (
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ProgramBuilder,
    Task,
    Wait,
)

K = InstructionKind


@st.composite
def sync_programs(draw: Any, max_tasks: int = 6, pages: bool = True) -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16))
    acts = [
        b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, 16))
        for i in range(draw(st.integers(1, 3)))
    ]
    n = draw(st.integers(1, max_tasks))
    tasks: list[Task] = []
    for i in range(n):
        op = draw(st.sampled_from((K.COPY, K.ADD, K.GEMV_TILE)))
        src = st.sampled_from([x, *acts])
        out = draw(st.sampled_from(acts))
        if tasks and draw(st.integers(0, 3)) == 0:
            counter = draw(st.sampled_from(tasks)).out_counter
        else:
            counter = b.new_counter(f"t{i}")
        params: dict[str, Any] = {}
        if op is K.COPY:
            ins = [draw(src)]
        elif op is K.ADD:
            ins = [draw(src), draw(src)]
        else:
            ins = [draw(src), w]
            params = {"K": 16, "N_tile": 8, "n_off": draw(st.sampled_from((0, 8)))}
        tasks.append(Task(i, op, ins, [out], counter, [], params, label=f"t{i}"))
    b.tasks = tasks
    nprod = {c.id: sum(t.out_counter == c.id for t in tasks) for c in b.counters}
    sms = draw(st.sampled_from((None, 1, 2)))
    used = sorted({u.out_counter for u in tasks})
    for t in tasks:
        earlier = sorted({u.out_counter for u in tasks[: t.id]} - {t.out_counter})
        others = [c for c in used if c != t.out_counter] or used
        pool = earlier if earlier and draw(st.integers(0, 4)) else others
        if not draw(st.integers(0, 7)):
            pool = used
        for c in draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)):
            full = nprod[c]
            thr = draw(st.sampled_from((full, full, full, 1, full + 1)))
            t.waits.append(Wait(c, thr))
        if sms is not None:
            t.sm = draw(st.integers(0, sms - 1))
    prog = b.build()
    if pages and len(acts) >= 2 and draw(st.booleans()):
        prog.pages = PageAllocation({acts[0]: 0, acts[1]: 0}, [Page(0, MemSpace.GLOBAL_SCRATCH, 64)])
    if sms is not None:
        from amkspec.ir import TARGETS

        prog.target = TARGETS["h100"]
    return prog


MUTATIONS = (
    "drop-wait",
    "lower-threshold",
    "raise-threshold",
    "share-counter",
    "move-sm",
    "move-task",
    "retarget-output",
)


@st.composite
def mutated_valid_programs(draw: Any, max_tasks: int = 8) -> tuple[str, MegakernelProgram]:
    """A valid program with one rule-relevant edit (which may or may not break it)."""
    from amkspec.strategies import valid_programs

    prog = draw(valid_programs(max_tasks=max_tasks))
    how = draw(st.sampled_from(MUTATIONS))
    tasks = prog.tasks
    t = draw(st.sampled_from(tasks))
    if how in ("drop-wait", "lower-threshold", "raise-threshold") and t.waits:
        i = draw(st.integers(0, len(t.waits) - 1))
        if how == "drop-wait":
            del t.waits[i]
        else:
            t.waits[i].threshold += -1 if how == "lower-threshold" else 1
    elif how == "share-counter":
        t.out_counter = draw(st.sampled_from(tasks)).out_counter
    elif how == "move-sm":
        t.sm = draw(st.integers(0, 3))
    elif how == "move-task":
        tasks.remove(t)
        tasks.insert(draw(st.integers(0, len(tasks))), t)
    elif how == "retarget-output" and t.outputs:
        same = [
            b.id
            for b in prog.buffers
            if b.kind is BufferKind.ACTIVATION
            and b.shape == prog.buffers[t.outputs[0]].shape
            and b.dtype == prog.buffers[t.outputs[0]].dtype
        ]
        if same:
            t.outputs[0] = draw(st.sampled_from(same))
    return how, prog
