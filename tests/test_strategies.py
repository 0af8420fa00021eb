"""The public hypothesis strategies: what they promise, checked independently and by validate()."""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings

from amkspec import validate
from amkspec.ir import (
    READONLY_KINDS,
    BufferKind,
    FormatError,
    InstructionKind,
    MegakernelProgram,
    VersionError,
    VersionWarning,
    dumps,
    from_dict,
    loads,
)
from amkspec.strategies import arbitrary_programs, json_documents, mutated_documents, valid_programs

FIND = settings(max_examples=2000, database=None, suppress_health_check=list(HealthCheck))


def _ancestors(prog: MegakernelProgram) -> dict[int, set[int]]:
    producers = defaultdict(list)
    for t in prog.tasks:
        producers[t.out_counter].append(t.id)
    anc: dict[int, set[int]] = {}
    for t in prog.tasks:
        preds = {p for w in t.waits for p in producers[w.counter]}
        anc[t.id] = set().union(preds, *(anc[p] for p in preds))
    return anc


def _check_construction(prog: MegakernelProgram, max_tasks: int) -> None:
    buffers = {b.id: b for b in prog.buffers}
    counters = {c.id for c in prog.counters}
    assert 2 <= len(prog.tasks) <= max_tasks
    position = {t.id: i for i, t in enumerate(prog.tasks)}
    producers: dict[int, list[int]] = defaultdict(list)
    for t in prog.tasks:
        producers[t.out_counter].append(t.id)
    for t in prog.tasks:
        assert set(t.inputs) | set(t.outputs) <= set(buffers)
        assert t.out_counter in counters
        for w in t.waits:  # all-join on a counter whose producers all come earlier in the list
            assert w.threshold == len(producers[w.counter]) >= 1
            assert all(position[p] < position[t.id] for p in producers[w.counter])
    anc = _ancestors(prog)
    writers: dict[int, list[Any]] = defaultdict(list)
    for t in prog.tasks:
        for b in t.outputs:
            writers[b].append(t)
    for t in prog.tasks:  # every transient read is ordered after every other writer
        for b in t.inputs:
            if buffers[b].kind not in READONLY_KINDS:
                assert writers[b], f"buffer {b} is read but never written"
                assert all(w.id == t.id or w.id in anc[t.id] for w in writers[b])
    for b, ws in writers.items():  # several writers: GEMV tiles on one counter, disjoint columns
        if len(ws) > 1:
            assert {w.op for w in ws} == {InstructionKind.GEMV_TILE}
            assert len({w.out_counter for w in ws}) == 1
            cols = sorted((w.params["n_off"], w.params["n_off"] + w.params["N_tile"]) for w in ws)
            assert all(a[1] <= b_[0] for a, b_ in zip(cols, cols[1:]))  # noqa: B905
            assert cols[-1][1] <= buffers[b].shape[-1]
    outputs = [b.id for b in prog.buffers if b.kind is BufferKind.IO_OUTPUT]
    assert outputs and all(writers[o] for o in outputs)


@pytest.mark.parametrize("max_tasks", [2, 9, 24])
def test_valid_programs_keep_their_construction_promises(max_tasks: int) -> None:
    @given(valid_programs(max_tasks))
    def check(prog: MegakernelProgram) -> None:
        _check_construction(prog, max_tasks)

    check()


@given(valid_programs(max_tasks=20))
def test_valid_programs_are_accepted_by_validate(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert result.ok, result.errors
    assert not result.warnings


@given(valid_programs(max_tasks=16, assign_sms=True, allocate_pages=True))
def test_sm_assignment_and_pages_are_sound(prog: MegakernelProgram) -> None:
    assert prog.target is not None and prog.pages is not None
    assert all(t.sm is not None and 0 <= t.sm < prog.target.num_sms for t in prog.tasks)
    activations = {b.id: b for b in prog.buffers if b.kind is BufferKind.ACTIVATION}
    assert set(prog.pages.buffer_to_page) == set(activations)
    sizes = {p.id: p.nbytes for p in prog.pages.pages}
    assert all(activations[b].nbytes <= sizes[p] for b, p in prog.pages.buffer_to_page.items())
    result = validate(prog)
    assert result.ok, result.errors


@given(valid_programs(max_tasks=8, permute_ids=True))
def test_permuted_ids_are_consistent_but_not_positions(prog: MegakernelProgram) -> None:
    ids = {b.id for b in prog.buffers}
    assert all(set(t.inputs) | set(t.outputs) <= ids for t in prog.tasks)
    assert [b.id for b in prog.buffers] != list(range(len(prog.buffers)))
    assert {d.split()[0] for d in validate(prog).errors} == {"S102"}


def test_valid_programs_cover_every_feature() -> None:
    def has(op: InstructionKind) -> Any:
        return lambda p: any(t.op is op for t in p.tasks)

    for op in (InstructionKind.ATTENTION_TILE, InstructionKind.KV_APPEND, InstructionKind.ROPE,
               InstructionKind.SILU_MUL, InstructionKind.RMSNORM, InstructionKind.EMBED):
        find(valid_programs(24), has(op), settings=FIND)
    find(valid_programs(16), lambda p: any(
        len([t for t in p.tasks if t.out_counter == c.id]) > 1 for c in p.counters), settings=FIND)
    shared = find(valid_programs(16, allocate_pages=True),
                  lambda p: p.pages is not None and len(set(p.pages.buffer_to_page.values()))
                  < len(p.pages.buffer_to_page), settings=FIND)
    assert validate(shared).ok


def test_arbitrary_programs_reach_the_broken_cases() -> None:
    broken: dict[str, Any] = {
        "empty": lambda p: not p.tasks and not p.buffers,
        "dangling input": lambda p: any(i not in {b.id for b in p.buffers} for t in p.tasks for i in t.inputs),
        "id is not position": lambda p: any(t.id != i for i, t in enumerate(p.tasks)),
        "zero threshold": lambda p: any(w.threshold == 0 for t in p.tasks for w in t.waits),
        "huge threshold": lambda p: any(w.threshold >= 2**32 for t in p.tasks for w in t.waits),
        "cycle": lambda p: p.topological_order() is None,
        "bool param": lambda p: any(isinstance(v, bool) for t in p.tasks for v in t.params.values()),
        "nan param": lambda p: any(isinstance(v, float) and math.isnan(v) for t in p.tasks
                                   for v in t.params.values()),
    }
    for name, condition in broken.items():
        prog = find(arbitrary_programs(), condition, settings=FIND)
        assert condition(loads(dumps(prog))), name


@given(arbitrary_programs())
def test_validate_judges_arbitrary_programs_without_raising(prog: MegakernelProgram) -> None:
    result = validate(prog)
    assert result.ok == (not result.errors)


@given(json_documents())
def test_json_documents_are_loadable_json(doc: dict[str, Any]) -> None:
    assert dumps(from_dict(json.loads(json.dumps(doc)))) == json.dumps(doc, indent=2)


def test_mutated_documents_include_loadable_and_unloadable_ones() -> None:
    def loadable(doc: Any) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VersionWarning)
            try:
                from_dict(doc)
            except (FormatError, VersionError):
                return False
        return True

    find(mutated_documents(), loadable, settings=FIND)
    find(mutated_documents(), lambda d: not loadable(d), settings=FIND)
    find(mutated_documents(), lambda d: not isinstance(d, dict), settings=FIND)
