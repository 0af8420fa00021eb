"""The replay checker (no z3): legal traces pass, illegal ones and false claims are refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from amkspec.evidence.replay import ReplayError, check_witness, replay
from amkspec.ir.trace import Event
from amkspec.programs.gallery import EXAMPLES, partial_join_race, sm_queue_deadlock, threshold_too_high
from amkspec.smt import Prover


def _events(*pairs: tuple[str, int]) -> list[Event]:
    return [Event(k, t) for k, t in pairs]  # type: ignore[arg-type]


def test_a_legal_complete_run_replays() -> None:
    prog = partial_join_race()
    m = replay(prog, _events(("start", 0), ("start", 1), ("end", 1), ("end", 0), ("start", 2), ("end", 2)))
    assert m.counters[0] == 2 and set(m.ended) == {0, 1, 2}


@pytest.mark.parametrize(
    "events, why",
    [
        ([("start", 2)], "counter 0 = 0 < 1"),
        ([("start", 0), ("start", 0)], "starts twice"),
        ([("end", 0)], "without a matching start"),
        ([("start", 0), ("end", 0), ("end", 0)], "without a matching start"),
        ([("start", 9)], "no task 9"),
    ],
)
def test_illegal_traces_are_refused(events: list[tuple[str, int]], why: str) -> None:
    with pytest.raises(ReplayError, match=why):
        replay(partial_join_race(), _events(*events))


def test_sm_queue_order_is_enforced() -> None:
    with pytest.raises(ReplayError, match="SM queue predecessor"):
        replay(sm_queue_deadlock(), _events(("start", 1)))


def _witness(prog: Any, kind: str) -> dict[str, Any]:
    w = next(r.witness for r in Prover(prog).prove_all() if r.witness is not None and r.witness.kind == kind)
    return w.to_dict(prog)


def test_a_read_race_claim_must_hold() -> None:
    prog = partial_join_race()
    good = _witness(prog, "read-race")
    check_witness(prog, good)
    bad = copy.deepcopy(good)
    w = bad["roles"]["writer"]
    r = bad["roles"]["reader"]
    bad["events"] = [
        {"event": "start", "task": w},
        {"event": "end", "task": w},
        {"event": "start", "task": 1 - w},
    ]
    bad["events"] += [{"event": "end", "task": 1 - w}, {"event": "start", "task": r}]
    with pytest.raises(ReplayError, match="does not start before writer"):
        check_witness(prog, bad)


def test_wrong_counter_annotations_are_refused() -> None:
    prog = partial_join_race()
    w = _witness(prog, "read-race")
    w["events"][1]["counters"] = {"0": 5}
    with pytest.raises(ReplayError, match="claims counter"):
        check_witness(prog, w)


def test_a_deadlock_claim_must_name_exactly_the_blocked_tasks() -> None:
    prog = threshold_too_high()
    w = _witness(prog, "deadlock")
    check_witness(prog, w)
    w["blocked"][0]["waits"][0]["value"] = 0
    with pytest.raises(ReplayError, match="blocking reasons"):
        check_witness(prog, w)
    w["blocked"] = []
    with pytest.raises(ReplayError, match="not exactly the unstarted"):
        check_witness(prog, w)


def test_a_deadlock_claim_naming_a_task_twice_is_refused() -> None:
    """A second, false entry for a blocked task must not hide behind the true one."""
    prog = threshold_too_high()
    w = _witness(prog, "deadlock")
    first = w["blocked"][0]
    bogus = {
        "task": first["task"],
        "waits": [{"counter": 99, "threshold": 7, "value": 3}],
        "queue_predecessor": 42,
    }
    for forged in ([bogus, *w["blocked"]], [*w["blocked"], copy.deepcopy(first)]):
        with pytest.raises(ReplayError, match="names a task twice"):
            check_witness(prog, {**w, "blocked": forged})


def test_a_fake_cycle_is_refused() -> None:
    prog = EXAMPLES["cycle"]()
    w = _witness(prog, "cycle")
    check_witness(prog, w)
    w["cycle"][0]["via"] = "counter 7"
    with pytest.raises(ReplayError, match="no edge"):
        check_witness(prog, w)


@pytest.mark.parametrize(
    "junk",
    [{}, {"kind": "read-race"}, {"kind": "nonsense", "events": []}, {"kind": "deadlock", "events": [1]}],
)
def test_malformed_witnesses_are_refused_cleanly(junk: dict[str, Any]) -> None:
    with pytest.raises(ReplayError):
        check_witness(partial_join_race(), junk)
