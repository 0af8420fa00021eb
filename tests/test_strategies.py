"""The public hypothesis strategies: what they promise, checked independently and by validate()."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings

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
)
from amkspec.programs.strategies import arbitrary_programs, json_documents, mutated_documents, valid_programs


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
    assert 1 <= len(prog.tasks) <= max_tasks
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
    for b, ws in writers.items():  # several writers: GEMV/GEMM tiles on one counter, disjoint columns
        if len(ws) > 1:
            assert len({w.op for w in ws}) == 1
            assert {w.op for w in ws} <= {InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE}
            assert len({w.out_counter for w in ws}) == 1
            cols = sorted((w.params["n_off"], w.params["n_off"] + w.params["N_tile"]) for w in ws)
            assert all(a[1] <= b_[0] for a, b_ in itertools.pairwise(cols))
            assert cols[-1][1] <= buffers[b].shape[-1]
    outputs = [b.id for b in prog.buffers if b.kind is BufferKind.IO_OUTPUT]
    assert outputs and all(writers[o] for o in outputs)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(valid_programs(max_tasks=24))
def test_valid_programs_cover_every_opcode(prog: MegakernelProgram) -> None:
    SEEN.update(t.op for t in prog.tasks)


SEEN: set[InstructionKind] = set()


def test_every_opcode_was_generated() -> None:
    """Runs after the test above (file order): the strategy produced all 20 opcodes."""
    if set(InstructionKind) != SEEN:
        test_valid_programs_cover_every_opcode()
    assert set(InstructionKind) == SEEN, sorted(op.name for op in set(InstructionKind) - SEEN)


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
    # A FUSED recipe is not marshalled into the ABI param table (S112 warns about it).
    assert not [w for w in result.warnings if not (w.startswith("S112") and "'recipe'" in w)]


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


def _features_seen(strategy: Any, features: dict[str, Any], examples: int | None = None) -> set[str]:
    """Names of the features that some example of ``strategy`` shows (derandomized: no flakes);
    ``examples`` overrides the profile's count for a feature that is rare."""
    seen: set[str] = set()

    @settings(derandomize=True, database=None, **({"max_examples": examples} if examples else {}))
    @given(strategy)
    def collect(example: Any) -> None:
        seen.update(name for name, has in features.items() if has(example))

    collect()
    return seen


def _has_op(op: InstructionKind) -> Any:
    return lambda p: any(t.op is op for t in p.tasks)


VALID_FEATURES: dict[str, Any] = {
    **{op.name: _has_op(op) for op in (InstructionKind.ATTENTION_TILE, InstructionKind.ATTENTION_COMBINE,
                                       InstructionKind.KV_APPEND, InstructionKind.ROPE, InstructionKind.EMBED,
                                       InstructionKind.ADD)},
    "tiled writer": lambda p: any(sum(t.out_counter == c.id for t in p.tasks) > 1 for c in p.counters),
    "shared page": lambda p: p.pages is not None
    and len(set(p.pages.buffer_to_page.values())) < len(p.pages.buffer_to_page),
    "sm assigned": lambda p: any(t.sm is not None for t in p.tasks),
}


def test_valid_programs_cover_every_feature() -> None:
    # the rarest feature (ROPE) is in about one program in seven: 100 examples see every feature
    assert _features_seen(valid_programs(24), VALID_FEATURES, examples=100) == set(VALID_FEATURES)


def _ids(p: MegakernelProgram) -> set[int]:
    return {b.id for b in p.buffers}


BROKEN_FEATURES: dict[str, Any] = {
    "empty": lambda p: not p.tasks and not p.buffers,
    "dangling input": lambda p: any(i not in _ids(p) for t in p.tasks for i in t.inputs),
    "id is not position": lambda p: any(t.id != i for i, t in enumerate(p.tasks)),
    "zero threshold": lambda p: any(w.threshold == 0 for t in p.tasks for w in t.waits),
    "huge threshold": lambda p: any(w.threshold >= 2**32 for t in p.tasks for w in t.waits),
    "cycle": lambda p: p.topological_order() is None,
    "bool param": lambda p: any(isinstance(v, bool) for t in p.tasks for v in t.params.values()),
    "nan param": lambda p: any(isinstance(v, float) and math.isnan(v) for t in p.tasks
                               for v in t.params.values()),
}


def test_arbitrary_programs_reach_the_broken_cases() -> None:
    assert _features_seen(arbitrary_programs(), BROKEN_FEATURES) == set(BROKEN_FEATURES)


@given(json_documents())
def test_json_documents_are_loadable_json(doc: dict[str, Any]) -> None:
    assert dumps(from_dict(json.loads(json.dumps(doc)))) == json.dumps(doc, indent=2)


def _loadable(doc: Any) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VersionWarning)
        try:
            from_dict(doc)
        except (FormatError, VersionError):
            return False
    return True


def test_mutated_documents_include_loadable_and_unloadable_ones() -> None:
    features = {"loadable": _loadable, "unloadable": lambda d: not _loadable(d),
                "not an object": lambda d: not isinstance(d, dict)}
    # about one mutated document in eight still loads: 100 examples see one but for 1 in 10^6 seeds
    assert _features_seen(mutated_documents(), features, examples=100) == set(features)


@given(valid_programs(max_tasks=16))
def test_valid_programs_run_on_the_reference_vm(prog: MegakernelProgram) -> None:
    import torch

    from amkspec.vm.machine import ReferenceVM

    weights = {
        b.source: torch.randint(-8, 8, b.shape) if b.dtype.is_integer else torch.randn(b.shape)
        for b in prog.buffers if b.kind is BufferKind.WEIGHT
    }
    inputs = {b.name: torch.zeros(b.shape, dtype=torch.int32) if b.dtype.is_integer else torch.randn(b.shape)
              for b in prog.buffers if b.kind is BufferKind.IO_INPUT}
    outputs = ReferenceVM(prog).run(weights, inputs)
    persistent = (BufferKind.IO_OUTPUT, BufferKind.KV_CACHE)
    expected = {b.name: b.shape for b in prog.buffers if b.kind in persistent}
    assert {name: tuple(t.shape) for name, t in outputs.items()} == expected
