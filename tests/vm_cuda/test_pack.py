"""The one packer (spec §8.2): refusal, the test-only override, and the image round-trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from amkspec import load
from amkspec.ir import PARAM_DEFAULTS, PARAM_FIELDS, PARAM_LAYOUT, BufferKind, MegakernelProgram
from amkspec.ir.graph import dependency_edges, writers_by_buffer
from amkspec.strategies import valid_programs
from amkspec.vm.binding import bind
from amkspec.vm.errors import RefusedProgram
from tests.conftest import EXAMPLES
from tests.vm_cuda.operands import operands
from vm_cuda import layout
from vm_cuda.pack import Packer, pack, unpack


def _bound(program: MegakernelProgram) -> dict[int, torch.Tensor]:
    weights, inputs = operands(program)
    return bind(program, weights, inputs, {}, set(writers_by_buffer(program)))


def test_a_rejected_program_is_refused_unless_the_test_only_override_is_given() -> None:
    program = load(EXAMPLES / "rejected_partial_join.json")
    with pytest.raises(RefusedProgram):
        pack(program, _bound(program))
    image = pack(program, _bound(program), _unsafe_skip_validation=True)
    assert unpack(image.tobytes()).header["n_instructions"] == len(program.tasks)


def _check_params(row: np.void, task_params: dict[str, object], defaults: dict[str, float]) -> None:
    given = {**defaults, **{k: v for k, v in task_params.items() if k in PARAM_FIELDS}}
    for i, name in enumerate(PARAM_LAYOUT):
        expect = given.get(name, 0)
        got = row["params"][name]
        if PARAM_FIELDS[name] == "f":
            assert got == np.float32(expect), name
        else:
            assert got == expect, name
        assert bool(int(row["param_mask"]) >> i & 1) == (name in given), name


def _check_queues(program: MegakernelProgram, queues: list[list[int]], tasks: np.ndarray) -> None:
    assert sorted(i for q in queues for i in q) == list(range(len(program.tasks)))
    where = {i: (sm, k) for sm, q in enumerate(queues) for k, i in enumerate(q)}
    pos = {t.id: i for i, t in enumerate(program.tasks)}
    for i, task in enumerate(program.tasks):
        assert tasks[i]["sm"] == where[i][0]
        if task.sm is not None:
            assert where[i][0] == task.sm
    for a, b in dependency_edges(program):
        (sa, ka), (sb, kb) = where[pos[a]], where[pos[b]]
        assert sa != sb or ka < kb, (a, b)


@settings(max_examples=25)
@given(valid_programs(max_tasks=14))
def test_unpacking_the_image_gives_back_the_program(program: MegakernelProgram) -> None:
    bound = _bound(program)
    packer = Packer(program)
    image = packer.image(bound, timeout_s=1.5)
    got = unpack(image.tobytes())
    h = got.header
    assert (h["magic"], h["abi_major"], h["abi_minor"]) == (layout.IMAGE_MAGIC, 0, 2)
    assert (h["n_buffers"], h["n_counters"], h["n_instructions"]) == (
        len(program.buffers) + len(packer.scratch),  # FUSED recipes' scratch follows the program's buffers
        len(program.counters),
        len(program.tasks),
    )
    assert h["timeout_ns"] == 1_500_000_000 and h["num_sms"] == len(got.queues)
    buf_ix = {b.id: i for i, b in enumerate(program.buffers)}
    ctr_ix = {c.id: i for i, c in enumerate(program.counters)}
    for row, task in zip(got.tasks, program.tasks, strict=True):
        assert row["op"] == task.op
        assert list(row["inputs"][: row["n_inputs"]]) == [buf_ix[b] for b in task.inputs]
        assert list(row["outputs"][: row["n_outputs"]]) == [buf_ix[b] for b in task.outputs]
        waits = list(
            zip(row["wait_counter"][: row["n_waits"]], row["wait_threshold"][: row["n_waits"]], strict=True)
        )
        assert waits == [(ctr_ix[w.counter], w.threshold) for w in task.waits]
        assert row["out_counter"] == ctr_ix[task.out_counter]
        assert not row["inputs"][row["n_inputs"] :].any() and not row["wait_counter"][row["n_waits"] :].any()
        _check_params(row, task.params, PARAM_DEFAULTS.get(task.op, {}))
    _check_queues(program, got.queues, got.tasks)
    assert list(got.counters) == [c.init for c in program.counters]
    for rec, buf in zip(got.buffers[: len(program.buffers)], program.buffers, strict=True):
        rank = len(buf.shape)
        assert (rec["rank"], rec["dtype"], rec["space"], rec["kind"]) == (
            rank,
            buf.dtype,
            buf.space,
            buf.kind,
        )
        assert list(rec["shape"][:rank]) == list(buf.shape) and rec["numel"] == math.prod(buf.shape)
        assert list(rec["stride"][:rank]) == [math.prod(buf.shape[d + 1 :]) for d in range(rank)]
        if buf.kind is not BufferKind.ACTIVATION:
            raw = bound[buf.id].contiguous().reshape(-1).view(torch.uint8).numpy()
            assert np.array_equal(got.storage(buf_ix[buf.id], raw.size), raw), buf.name
    _check_pages(program, got.buffers, buf_ix)


def _check_pages(program: MegakernelProgram, table: np.ndarray, buf_ix: dict[int, int]) -> None:
    """ACTIVATION buffers on one page share storage; every other buffer has its own (spec §1.6)."""
    page_of = program.pages.buffer_to_page if program.pages is not None else {}
    starts: dict[int, set[int]] = {}
    for buf in program.buffers:
        if buf.kind is BufferKind.ACTIVATION and buf.id in page_of:
            starts.setdefault(page_of[buf.id], set()).add(int(table[buf_ix[buf.id]]["ptr"]))
    assert all(len(s) == 1 for s in starts.values()), starts
    own = [int(table[buf_ix[b.id]]["ptr"]) for b in program.buffers if b.id not in page_of]
    shared = {p for s in starts.values() for p in s}
    assert len(set(own)) == len(own) and not set(own) & shared


def test_a_fused_recipe_becomes_steps_over_table_indices_with_zeroed_scratch() -> None:
    from amkspec.ir import BufferKind as BK
    from amkspec.ir import DType, InstructionKind, ProgramBuilder

    b = ProgramBuilder()
    x = b.new_buffer("x", BK.IO_INPUT, DType.F32, (1, 4))
    y = b.new_buffer("y", BK.IO_INPUT, DType.F32, (1, 4))
    z = b.new_buffer("z", BK.IO_OUTPUT, DType.F32, (1, 4))
    recipe = {
        "steps": [
            {"op": "ADD", "args": [{"in": 0}, {"in": 1}], "out": 0, "out_dtype": "float16"},
            {"op": int(InstructionKind.MUL), "args": [{"s": 0}], "out": "final", "params": {"scale": 2.0}},
        ]
    }
    b.add_task(InstructionKind.FUSED, [x, y], [z], params={"recipe": recipe})
    program = b.build()
    got = unpack(pack(program, _bound(program), _unsafe_skip_validation=True).tobytes())
    task = got.tasks[0]
    assert (task["step_first"], task["n_steps"], got.header["n_steps"]) == (1, 2, 2)
    add, mul = got.steps
    scratch = 3  # appended after the program's three buffers
    assert (add["op"], list(add["inputs"][:2]), add["outputs"][0]) == (InstructionKind.ADD, [0, 1], scratch)
    assert (mul["op"], mul["inputs"][0], mul["outputs"][0]) == (InstructionKind.MUL, scratch, 2)
    assert mul["params"]["scale"] == 2.0
    rec = got.buffers[scratch]
    assert (rec["dtype"], list(rec["shape"][:2]), rec["kind"]) == (DType.F16, [1, 4], BK.ACTIVATION)
    assert not got.storage(scratch, 8).any()
