"""Every kind of violation a witness can show replays on the ReferenceVM's shadow state (DESIGN.md)."""

from __future__ import annotations

import pytest
import torch

from amkspec.ir import BufferKind, DType, ProgramBuilder
from amkspec.ir.trace import Event
from amkspec.programs.small import paged_pair, two_tiles
from amkspec.vm import ReferenceVM, Replay, TraceError, replay_trace
from tests.vm.strategies import K

X = {"x": torch.tensor([[1.0, 2.0, 3.0, 4.0]])}


def _trace(*steps: str) -> list[Event]:
    return [Event("start" if s[0] == "s" else "end", int(s[1:])) for s in steps]


def test_a_valid_page_reuse_changes_no_result() -> None:
    out = ReferenceVM(paged_pair()).run({}, X)
    assert torch.equal(out["y"], 6 * X["x"]) and torch.equal(out["z"], 5 * X["x"])


def test_a_clobbered_page_is_reported_and_seen() -> None:
    program = paged_pair(reuse_after_read=False)
    result = replay_trace(program, _trace("s0", "e0", "s2", "e2", "s1", "e1"), inputs=X)
    (stale,) = result.report.stale_reads
    assert (stale.reader, stale.buffer, stale.clobbered_by, stale.pending) == (1, 1, 2, ())
    assert torch.equal(result.outputs["y"], 15 * X["x"])
    assert result.report.describe() == ["task 1 read buffer 1 after task 2 overwrote its page"]


def test_the_same_program_in_a_safe_order_reads_clean() -> None:
    result = replay_trace(paged_pair(reuse_after_read=False), _trace("s0", "e0", "s1", "e1"), inputs=X)
    assert result.report.clean and torch.equal(result.outputs["y"], 6 * X["x"])


def test_overlapping_writers_are_a_write_conflict() -> None:
    program = two_tiles()
    program.tasks[1].params["n_off"] = 1
    result = replay_trace(program, _trace("s0", "s1", "e0", "e1"))
    (conflict,) = result.report.conflicts
    assert (conflict.first, conflict.second, conflict.buffer, conflict.elements) == (0, 1, 2, 1)


def test_disjoint_sibling_tiles_do_not_conflict() -> None:
    result = replay_trace(two_tiles(), _trace("s0", "s1", "e0", "e1"))
    assert result.report.clean


def test_a_read_of_a_buffer_nobody_writes_is_stale() -> None:
    b = ProgramBuilder()
    a = b.new_buffer("a", BufferKind.ACTIVATION, DType.F32, (2,))
    z = b.new_buffer("z", BufferKind.IO_OUTPUT, DType.F32, (2,))
    b.add_task(K.COPY, [a], [z], label="copy")
    result = replay_trace(b.build(), _trace("s0", "e0"))
    (stale,) = result.report.stale_reads
    assert stale.unwritten and stale.seen is not None and torch.equal(stale.seen, torch.zeros(2))


def test_tasks_of_one_sm_run_one_at_a_time_in_list_order() -> None:
    program = two_tiles()
    for task in program.tasks:
        task.sm = 0
    vm = ReferenceVM(program)
    with pytest.raises(TraceError, match="queue of SM 0"):
        vm.run({"w": torch.ones(4, 3)}, {"x": torch.ones(1, 3)}, policy=Replay(_trace("s1")))
    with pytest.raises(TraceError, match="queue of SM 0"):
        vm.run({"w": torch.ones(4, 3)}, {"x": torch.ones(1, 3)}, policy=Replay(_trace("s0", "s1")))


def test_traces_may_be_json_or_a_witness_object() -> None:
    as_json = [{"event": "start", "task": 0, "counters": {}}, {"event": "end", "task": 0}]
    for trace in (as_json, {"kind": "read-race", "events": as_json}):
        assert replay_trace(paged_pair(), trace, inputs=X).stats.order[:1] == [0]
    with pytest.raises(TraceError, match="not a trace"):
        replay_trace(paged_pair(), [{"event": "begin", "task": 0}], inputs=X)


def test_a_page_write_in_flight_during_a_read_is_a_clobber() -> None:
    program = paged_pair(reuse_after_read=False)
    result = replay_trace(program, _trace("s0", "e0", "s2", "s1", "e2", "e1"), inputs=X)
    (stale,) = result.report.stale_reads
    assert (stale.reader, stale.clobbered_by) == (1, 2)
