"""Property: page colouring and SM assignment are safe on arbitrary DAG programs, not only decoders."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import amkspec
from amkspec.ir import TARGETS, BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.lower.pages import allocate_pages
from amkspec.lower.sm_assign import assign_sms
from tests.lower.checks import page_clobbers, sm_queue_violations


@st.composite
def dag_programs(draw: st.DrawFn) -> MegakernelProgram:
    """Tasks in topological list order; each ADDs two earlier tensors of one width into a fresh one."""
    b = ProgramBuilder()
    ready: dict[int, list[tuple[int, int | None]]] = {
        w: [(b.new_buffer(f"x{w}", BufferKind.IO_INPUT, DType.F32, (1, w)), None)] for w in (8, 24)
    }
    last: tuple[int, int | None] = ready[8][0]
    for i in range(draw(st.integers(1, 14))):
        width = draw(st.sampled_from([8, 8, 24]))
        srcs = [draw(st.sampled_from(ready[width])) for _ in range(2)]
        out = b.new_buffer(f"a{i}", BufferKind.ACTIVATION, DType.F32, (1, width))
        waits = [b.after(t) for _, t in srcs if t is not None]
        tid = b.add_task(InstructionKind.ADD, [s for s, _ in srcs], [out], waits=waits, label=f"t{i}")
        last = (out, tid)
        ready[width].append(last)
    last_buf, last_task = last
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, b.buffers[last_buf].shape)
    waits = [b.after(last_task)] if last_task is not None else []
    b.add_task(InstructionKind.ADD, [last_buf, last_buf], [y], waits=waits, label="out")
    return b.build(target=TARGETS["t4"])


@given(dag_programs())
def test_graph_colouring_is_safe_and_never_worse(prog: MegakernelProgram) -> None:
    assert amkspec.validate(prog).ok
    alloc = allocate_pages(prog, "graph_color")
    assert alloc is not None
    prog.pages = alloc
    assert page_clobbers(prog) == []
    assert alloc.total_scratch_bytes <= sum(b.nbytes for b in prog.buffers if b.kind is BufferKind.ACTIVATION)
    bufs = prog.buffer_by_id()
    assert all(alloc.pages[p].nbytes >= bufs[b].nbytes for b, p in alloc.buffer_to_page.items())
    result = amkspec.validate(prog)
    assert result.ok, [str(e) for e in result.errors]


explicit_maps = st.dictionaries(st.integers(0, 5), st.integers(0, 39))


@given(dag_programs(), st.sampled_from(["round_robin", "load_balance"]), explicit_maps)
def test_any_assignment_keeps_queues_linear(prog: MegakernelProgram, policy: str,
                                            explicit: dict[int, int]) -> None:
    assign_sms(prog, policy)
    assign_sms(prog, {k: v for k, v in explicit.items() if k < len(prog.tasks)})
    assert sm_queue_violations(prog) == []
    assert amkspec.validate(prog).ok
