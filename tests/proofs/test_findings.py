"""Regression tests of issue 9's findings on validate() and explain (spec §3.3).

1. Two GEMM tiles writing the same columns with different ``m_off``, unordered, race: the
   semantics write every row, so validate rejects (R306) and explain proves nothing.
5. Two KV_APPEND tasks at different positions of one cache, ordered by a counter, are fine.
6. A task reading its own unwritten output is an error (R304), and replay shows the stale read.
"""

from __future__ import annotations

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.proofs import validate
from amkspec.vm.witness import replay_trace

K = InstructionKind


def _codes(prog: MegakernelProgram) -> set[str]:
    return {d.code for d in validate(prog).diagnostics if d.severity.value == "error"}


def gemm_rows_program(m_offs: tuple[int, int] = (0, 2)) -> MegakernelProgram:
    """Two GEMM tiles, columns [0, 8) of one [4, 16] output, rows m_off..m_off+2, one counter."""
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (4, 16))
    w1 = b.new_buffer("w1", BufferKind.WEIGHT, DType.F32, (16, 16))
    w2 = b.new_buffer("w2", BufferKind.WEIGHT, DType.F32, (16, 16))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (4, 16))
    c = b.new_counter("tiles")
    for i, (w, m_off) in enumerate(zip((w1, w2), m_offs, strict=True)):
        params = {"K": 16, "N_tile": 8, "n_off": 0, "m_off": m_off, "M_tile": 2}
        b.add_task(K.GEMM_TILE, [x, w], [y], c, params=params, label=f"g{i}")
    for i, n_off in enumerate((8,)):
        params = {"K": 16, "N_tile": 8, "n_off": n_off, "m_off": 0, "M_tile": 4}
        b.add_task(K.GEMM_TILE, [x, w1], [y], c, params=params, label=f"rest{i}")
    return b.build()


def test_gemm_tiles_with_different_m_off_race() -> None:
    prog = gemm_rows_program()
    assert "R306" in _codes(prog)


def test_gemm_race_is_not_proved_by_explain() -> None:
    from amkspec.smt.explain import explain

    result = explain(gemm_rows_program())
    assert result.verdict == "rejected"
    assert not any(f.status == "proved" for f in result.findings)
    race = next(f for f in result.findings if f.code == "R306")
    assert race.status == "witnessed"


def test_gemm_race_changes_the_result_on_the_vm() -> None:
    """The rows both tiles write end up from whichever ran last: a real race."""
    prog = gemm_rows_program()
    outs = []
    for first, second in ((0, 1), (1, 0)):
        trace = [("start", first), ("end", first), ("start", second), ("end", second)]
        outs.append(replay_trace(prog, [{"event": e, "task": t} for e, t in trace]).outputs["y"])
    assert not outs[0][:, :8].equal(outs[1][:, :8])


def kv_program(ordered: bool = True) -> MegakernelProgram:
    """Two KV_APPENDs at positions 0 and 1 of one cache; the second waits for the first."""
    b = ProgramBuilder()
    k = b.new_buffer("k", BufferKind.IO_INPUT, DType.F32, (1, 8))
    cache = b.new_buffer("cache", BufferKind.KV_CACHE, DType.F32, (4, 2, 4))
    first = b.add_task(K.KV_APPEND, [k, cache], [cache], params={"pos": 0}, label="append0")
    waits = [b.after(first)] if ordered else []
    b.add_task(K.KV_APPEND, [k, cache], [cache], waits=waits, params={"pos": 1}, label="append1")
    return b.build()


def test_ordered_kv_appends_at_different_positions_are_accepted() -> None:
    assert validate(kv_program()).ok, validate(kv_program()).errors


def test_kv_appends_are_proved_by_explain() -> None:
    from amkspec.smt.explain import explain

    result = explain(kv_program())
    assert result.verdict == "accepted"
    assert result.findings and all(f.status == "proved" for f in result.findings)


def self_read_program() -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 8))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 8))
    b.add_task(K.ADD, [x, y], [y], label="self")
    return b.build()


def test_a_self_read_is_an_error() -> None:
    assert "R304" in _codes(self_read_program())


def test_a_self_read_is_stale_on_replay() -> None:
    trace = [{"event": "start", "task": 0}, {"event": "end", "task": 0}]
    report = replay_trace(self_read_program(), trace).report
    assert [(r.reader, r.buffer) for r in report.stale_reads] == [(0, 1)]
