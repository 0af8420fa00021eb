"""The ProgramBuilder: ids are list positions, fresh counters, all-join helpers (spec §1, §3.3)."""

from __future__ import annotations

from amkspec.ir import BufferKind, DType, InstructionKind, MemSpace, ProgramBuilder, Wait, dumps, loads

Op = InstructionKind


def test_ids_are_list_positions_and_weights_get_a_source() -> None:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, [1, 8])
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F16, (8, 8))
    s = b.new_buffer("s", BufferKind.ACTIVATION, DType.F32, (1, 8), space=MemSpace.SMEM, source="ignored")
    assert (x, w, s) == (0, 1, 2)
    assert b.buffers[0].shape == (1, 8)
    assert b.buffers[0].source is None
    assert b.buffers[1].source == "w"
    assert b.buffers[2].space is MemSpace.SMEM


def test_add_task_makes_a_fresh_counter_unless_given_one() -> None:
    b = ProgramBuilder()
    shared = b.new_counter("tiles")
    t0 = b.add_task(Op.GEMV_TILE, [0, 1], [2], out_counter=shared, label="t0")
    t1 = b.add_task(Op.GEMV_TILE, [0, 1], [2], out_counter=shared, label="t1")
    t2 = b.add_task(Op.COPY, [2], [3], waits=[b.join(shared)], label="copy")
    assert [t0, t1, t2] == [0, 1, 2]
    assert b.tasks[2].out_counter == 1
    assert b.counters[1].note == "copy"
    assert b.tasks[2].waits == [Wait(shared, 2)]
    assert b.after(t2) == Wait(1, 1)


def test_waits_accept_pairs_and_params_are_copied() -> None:
    b = ProgramBuilder()
    params = {"eps": 1e-6}
    b.add_task(Op.RMSNORM, [0, 1], [2], waits=[(5, 3)], params=params, sm=2, est_bytes=10, est_flops=20)
    params["eps"] = 1.0
    task = b.tasks[0]
    assert task.waits == [Wait(5, 3)]
    assert task.params == {"eps": 1e-6}
    assert (task.sm, task.est_bytes, task.est_flops) == (2, 10, 20)
    assert task.describe() == "0:RMSNORM"


def test_build_gives_a_program_that_round_trips() -> None:
    b = ProgramBuilder()
    b.new_buffer("x", BufferKind.IO_INPUT, DType.I32, (1,))
    b.add_task(Op.NOP, [], [])
    prog = b.build(meta={"model": "m"})
    assert prog.meta == {"model": "m"}
    assert (prog.pages, prog.config, prog.target) == (None, None, None)
    assert loads(dumps(prog)) == prog
