"""Replaying event traces with shadow state: a race witness shows the stale value (DESIGN.md)."""

from __future__ import annotations

import pytest
import torch

from amkspec.ir.trace import Event
from amkspec.programs.small import scale_chain, two_tiles
from amkspec.vm import DeadlockError, ReferenceVM, RefusedProgram, Replay, TraceError

X = {"x": torch.tensor([[1.0, 2.0, 3.0, 4.0]])}


def _trace(*steps: str) -> list[Event]:
    """``"s1"`` = start task 1, ``"e0"`` = end task 0."""
    return [Event("start" if s[0] == "s" else "end", int(s[1:])) for s in steps]


def test_the_racy_program_is_rejected_by_the_validator() -> None:
    with pytest.raises(RefusedProgram):
        ReferenceVM(scale_chain(scale_waits=False))


def test_a_reader_that_starts_before_the_writer_ends_sees_the_old_value() -> None:
    vm = ReferenceVM(scale_chain(scale_waits=False), _unsafe_skip_validation=True)
    out = vm.run({}, X, policy=Replay(_trace("s0", "s1", "e0", "e1")))
    assert torch.equal(out["z"], torch.zeros(1, 4))
    assert vm.last_stats is not None and vm.last_stats.replay is not None
    (stale,) = vm.last_stats.replay.stale_reads
    assert (stale.reader, stale.buffer, stale.pending, stale.complete) == (1, 1, (0,), ())
    assert stale.seen is not None and torch.equal(stale.seen, torch.zeros(1, 4))
    assert vm.last_stats.replay.describe() == ["task 1 read buffer 1 before writer(s) 0 ended"]


def test_the_ordered_interleaving_of_the_same_program_reads_fresh_data() -> None:
    vm = ReferenceVM(scale_chain(scale_waits=False), _unsafe_skip_validation=True)
    out = vm.run({}, X, policy=Replay(_trace("s0", "e0", "s1", "e1")))
    assert torch.equal(out["z"], 6 * X["x"])
    assert vm.last_stats is not None and vm.last_stats.replay is not None
    assert vm.last_stats.replay.stale_reads == []
    assert [(r.reader, r.complete) for r in vm.last_stats.replay.reads] == [(1, (0,))]


def test_a_trace_prefix_is_finished_in_list_order() -> None:
    vm = ReferenceVM(scale_chain())
    out = vm.run({}, X, policy=Replay(_trace("s0")))
    assert torch.equal(out["z"], 6 * X["x"])
    assert vm.last_stats is not None and vm.last_stats.order == [0, 1]


def test_without_finish_a_prefix_leaves_later_tasks_unrun() -> None:
    vm = ReferenceVM(scale_chain())
    out = vm.run({}, X, policy=Replay(_trace("s0", "e0"), finish=False))
    assert torch.equal(out["z"], torch.zeros(1, 4))


@pytest.mark.parametrize(("steps", "match"), [
    (("s1",), "counter 0 is 0 < 1"),
    (("s0", "s0"), "twice"),
    (("e0",), "not running"),
    (("s7",), "does not have"),
])
def test_a_trace_that_is_no_execution_is_refused(steps: tuple[str, ...], match: str) -> None:
    vm = ReferenceVM(scale_chain())
    with pytest.raises(TraceError, match=match):
        vm.run({}, X, policy=Replay(_trace(*steps)))


def test_a_json_trace_replays_like_its_events() -> None:
    vm = ReferenceVM(scale_chain())
    json_trace = [e.to_dict() for e in _trace("s0", "e0", "s1", "e1")]
    assert Replay(json_trace) == Replay(_trace("s0", "e0", "s1", "e1"))
    out = vm.run({}, X, policy=Replay({"events": json_trace}))
    assert torch.equal(out["z"], 6 * X["x"])


@pytest.mark.parametrize("trace", [5, [{"event": "bogus", "task": 0}], [Event("start", 0), "s1"]])
def test_what_is_no_trace_is_refused_at_once(trace: object) -> None:
    with pytest.raises(TraceError, match="not a trace"):
        Replay(trace)


def test_overlapping_sibling_tiles_keep_each_others_columns() -> None:
    w = torch.arange(12.0).reshape(4, 3)
    x = torch.tensor([[1.0, 0.0, -1.0]])
    vm = ReferenceVM(two_tiles())
    out = vm.run({"w": w}, {"x": x}, policy=Replay(_trace("s0", "s1", "e1", "e0")))
    assert torch.equal(out["y"], x @ w.T)


def test_replay_of_a_stuck_program_raises_deadlock() -> None:
    program = scale_chain()
    program.tasks[1].waits[0].threshold = 2
    vm = ReferenceVM(program, _unsafe_skip_validation=True)
    with pytest.raises(DeadlockError, match="1:triple"):
        vm.run({}, X, policy=Replay(_trace("s0", "e0")))
