"""The footprint batch keyed by rule keys serves tasks whose own operand lists are not the index's
checked ones (spec §3.3, §7).

A task naming a buffer twice (SILU_MUL's ``[gate, gate]``) has a checked list that names it once;
round 8 lets such a task take its rule key when every id of its own lists is a known buffer (the
rules read operands, not which ones are one buffer), instead of :func:`task_regions`. Here, on
well-formed programs with repeated tasks whose lists name buffers twice, in another order, or name
unknown ids, ``True`` or ``1.0``: the batch gives every task what :func:`task_regions` gives it on
its own, and a directed program shows the keyed path is the one taken.
"""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from amkspec.footprint import Memo, all_task_regions, task_regions
from amkspec.ir import Buffer, BufferKind, DType, InstructionKind, MegakernelProgram, Task
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.structure import check_structure
from tests.footprint.test_keyed_footprints import _as_tuples
from tests.proofs.test_rule_memo import repeated_tasks


@st.composite
def _own_lists(draw: st.DrawFn) -> MegakernelProgram:
    """Well-formed programs whose tasks' own lists often differ from the checked ones."""
    prog = draw(repeated_tasks())
    tasks: list[Task] = list(prog.tasks)
    unknown = len(prog.buffers) + 7
    for task in tasks:
        how = draw(st.integers(0, 7))
        field = "inputs" if draw(st.booleans()) else "outputs"
        ids = list(getattr(task, field))
        if not ids:
            continue
        if how == 0:
            ids.append(ids[0])  # a buffer named twice
        elif how == 1:  # a buffer named twice anywhere
            ids.insert(draw(st.integers(0, len(ids))), draw(st.sampled_from(ids)))
        elif how == 2:
            ids.append(draw(st.sampled_from([unknown, True, 1.0, -1])))  # not a buffer's id
        elif how == 3:
            ids = [ids[0], *ids]
            ids[draw(st.integers(0, len(ids) - 1))] = draw(st.sampled_from([unknown, True]))
        setattr(task, field, ids)
    tasks.extend(copy.deepcopy(draw(st.lists(st.sampled_from(tasks), max_size=8))) if tasks else [])
    prog.tasks = tasks
    return prog


def _checked_index(prog: MegakernelProgram) -> ProgramIndex:
    ix = ProgramIndex(prog)
    list(check_structure(ix))  # sets buffers_well_formed, as in validate()
    return ix


@given(_own_lists())
def test_tasks_with_their_own_lists_get_their_own_footprint(prog: MegakernelProgram) -> None:
    ix = _checked_index(prog)
    keys = ix.rule_keys
    if keys is None:
        return
    memo = Memo()
    found = all_task_regions(
        ix.tasks, ix.inputs, ix.outputs, ix.buffers, memo, ix.columns, True, keys, ix.kinds
    )
    assert len(found) == ix.n
    for pos, task in enumerate(ix.tasks):
        alone = task_regions(task, ix.buffers, Memo())
        assert found[pos] is not None
        assert _as_tuples(found[pos]) == _as_tuples(alone)


def test_a_buffer_named_twice_takes_its_rule_key() -> None:
    buffers = [
        Buffer(id=0, name="gate", shape=(1, 8), dtype=DType.F32, kind=BufferKind.IO_INPUT),
        Buffer(id=1, name="out", shape=(1, 4), dtype=DType.F32, kind=BufferKind.IO_OUTPUT),
        Buffer(id=2, name="x", shape=(1, 4), dtype=DType.F32, kind=BufferKind.IO_INPUT),
    ]
    tasks = [
        Task(id=0, op=InstructionKind.ADD, inputs=[2, 2], outputs=[1], out_counter=0, params={}),
        Task(id=1, op=InstructionKind.ADD, inputs=[2, 2], outputs=[1], out_counter=0, params={}),
        # 7 names no buffer
        Task(id=2, op=InstructionKind.ADD, inputs=[2, 2, 7], outputs=[1], out_counter=0, params={}),
    ]
    ix = _checked_index(MegakernelProgram(buffers=buffers, tasks=tasks))
    keys = ix.rule_keys
    assert keys is not None and ix.inputs[0] == [2]  # the checked list names 2 once
    memo = Memo()
    found = all_task_regions(
        ix.tasks, ix.inputs, ix.outputs, ix.buffers, memo, ix.columns, True, keys, ix.kinds
    )
    assert keys[0] in memo.ops  # stored under the rule key: the keyed path, not task_regions
    assert found[0] is not None and found[1] is not None and found[0][1] is found[1][1]  # a hit
    for pos, task in enumerate(tasks):
        assert _as_tuples(found[pos]) == _as_tuples(task_regions(task, ix.buffers, Memo()))  # type: ignore[arg-type]
