"""The round-6 screens and columns of the validator change no diagnostic and no statistic.

- all-join (spec §3.3): the check answers "clean" at once when no int threshold is below its
  counter's producer count (:attr:`ProgramIndex.min_threshold`); switched off, the per-wait
  rule gives the same findings, and none when the screen passes;
- read-only writes (spec §3.3): the kind test inline equals the rule read through ``_kind``;
- statistics: ``sm_assigned`` a column at a time equals "some task's sm is an int", and the
  weights are the buffers whose kind is a weight kind (:attr:`ProgramIndex.buffer_kinds`);
- coverage's test "a box starts at index 0 on every axis" equals its plain statement.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import READONLY_KINDS, WEIGHT_KINDS, BufferKind, MegakernelProgram
from amkspec.proofs import races
from amkspec.proofs.index import ProgramIndex, is_int
from amkspec.proofs.validate import validate
from tests.proofs.test_race_shortcuts import _PROGRAMS

validate_module = sys.modules["amkspec.proofs.validate"]


def _rows(found: Any) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.tasks, d.buffers, d.counters) for d in found]


@given(_PROGRAMS)
def test_the_all_join_screen_hides_no_finding(prog: MegakernelProgram) -> None:
    screened = ProgramIndex(prog)
    found = _rows(races.check_all_join(screened))
    plain = ProgramIndex(prog)
    plain.__dict__["min_threshold"] = {c: -1 for c in plain.producers}  # the screen never passes
    assert _rows(races.check_all_join(plain)) == found
    lowest = screened.min_threshold
    if all(len(screened.producers.get(c, ())) <= t for c, t in lowest.items()):
        assert found == []


def test_a_partial_join_below_the_producer_count_is_found_past_the_screen() -> None:
    from amkspec.ir import Buffer, Counter, DType, InstructionKind, Task, Wait

    buffers = [Buffer(0, "x", BufferKind.ACTIVATION, DType.F32, (1, 4))]
    tiles = [Task(i, InstructionKind.NOP, [], [0], 0, []) for i in range(3)]
    reader = Task(3, InstructionKind.NOP, [0], [], 1, [Wait(0, 2)])
    full = Task(4, InstructionKind.NOP, [0], [], 1, [Wait(0, 3)])
    prog = MegakernelProgram(buffers=buffers, counters=[Counter(0), Counter(1)], tasks=[*tiles, reader, full])
    ix = ProgramIndex(prog)
    assert ix.min_threshold == {0: 2}
    assert [(d.code, d.tasks) for d in races.check_all_join(ix)] == [("R301", (3, 0, 1, 2))]


def _readonly_rule(ix: ProgramIndex) -> list[tuple[Any, ...]]:
    """R307 by its statement: every writer of a buffer whose kind is a read-only BufferKind."""
    found = []
    for bid, writers in ix.writers.items():
        kind = races._kind(ix, bid)
        if kind is not None and kind in READONLY_KINDS:
            name = ix.buffer_name(bid)
            found += [(f"task {ix.describe(w)} writes buffer {name} ", (bid,)) for w in writers]
    return found


@given(_PROGRAMS)
def test_read_only_writes_are_those_of_the_rule(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    found = [(d.message, d.buffers) for d in races.check_readonly_writes(ix)]
    want = _readonly_rule(ix)
    assert len(found) == len(want)
    assert all(m.startswith(head) and b == bids for (m, b), (head, bids) in zip(found, want, strict=True))


_SMS = st.sampled_from([None, 0, 3, -1, True, 1.0, "1", 2**70])


@st.composite
def _placed_programs(draw: st.DrawFn) -> MegakernelProgram:
    """A program whose tasks carry odd ``sm`` values, some records lacking the field."""
    prog: MegakernelProgram = draw(_PROGRAMS)
    tasks: list[Any] = prog.tasks if isinstance(prog.tasks, list) else []
    for pos, task in enumerate(tasks):
        if draw(st.booleans()):
            if hasattr(task, "sm") or draw(st.booleans()):
                task.sm = draw(_SMS)
            elif draw(st.booleans()):
                tasks[pos] = SimpleNamespace(id=getattr(task, "id", None))
    return prog


@given(_placed_programs())
def test_the_statistics_read_columns_as_their_definitions(prog: MegakernelProgram) -> None:
    ix = ProgramIndex(prog)
    assert validate_module._sm_assigned(ix.tasks) == any(is_int(getattr(t, "sm", None)) for t in ix.tasks)
    weights = [b for b in ix.buffers.values() if getattr(b, "kind", None) in WEIGHT_KINDS]
    kinds = ix.buffer_kinds
    assert [b for b, k in zip(ix.buffers.values(), kinds, strict=True) if k in WEIGHT_KINDS] == weights
    assert validate(prog).stats["sm_assigned"] == any(is_int(getattr(t, "sm", None)) for t in ix.tasks)


_BOXES = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), max_size=4).map(tuple)


@given(_BOXES)
def test_a_box_at_the_origin_starts_at_zero_on_every_axis(box: Any) -> None:
    assert races._at_origin(box) == all(lo == 0 for lo, _ in box)


def test_a_first_sm_only_equal_to_an_int_assigns_nothing() -> None:
    tasks: list[Any] = [SimpleNamespace(sm=True), SimpleNamespace(sm=1.0), SimpleNamespace()]
    assert not validate_module._sm_assigned(tasks)
    tasks.append(SimpleNamespace(sm=3))
    assert validate_module._sm_assigned(tasks) and validate_module._sm_assigned(tasks[::-1])
    assert not validate_module._sm_assigned([])
