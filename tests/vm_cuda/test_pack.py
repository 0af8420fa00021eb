"""The one packer (spec §8.2): refusal, the test-only override, and the image round-trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec import load
from amkspec.ir import PARAM_DEFAULTS, PARAM_FIELDS, PARAM_LAYOUT, BufferKind, MegakernelProgram
from amkspec.ir.graph import dependency_edges, writers_by_buffer
from amkspec.programs.strategies import valid_programs
from amkspec.vm import ReferenceVM
from amkspec.vm.binding import bind
from amkspec.vm.errors import RefusedProgram
from amkspec.vm.operands import operands
from tests.conftest import EXAMPLES
from vm_cuda import layout
from vm_cuda.pack import Packer, PackError, pack, unpack


def _bound(program: MegakernelProgram) -> dict[int, torch.Tensor]:
    weights, inputs = operands(program)
    return bind(program, weights, inputs, {}, set(writers_by_buffer(program)))


def test_a_rejected_program_is_refused_unless_the_test_only_override_is_given() -> None:
    program = load(EXAMPLES / "rejected_partial_join.json")
    with pytest.raises(RefusedProgram, match=r"^MegakernelVM refuses a program validate\(\) rejected"):
        pack(program, _bound(program))
    with pytest.raises(RefusedProgram, match=r"^ReferenceVM refuses"):  # each VM names itself
        ReferenceVM(program)
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


def _small_image() -> np.ndarray:
    program = load(EXAMPLES / "rejected_partial_join.json")
    return pack(program, _bound(program), _unsafe_skip_validation=True).data


_INT_RANGE = {"<u4": (0, 2**32 - 1), "<i4": (-(2**31), 2**31 - 1), "<i8": (-(2**63), 2**63 - 1)}


@st.composite
def corrupted_images(draw: st.DrawFn) -> np.ndarray:
    """A good image with header fields set to arbitrary values and/or arbitrary bytes overwritten."""
    data = _small_image().copy()
    header = data[: layout.HEADER.itemsize].view(layout.HEADER)
    names = list(layout.HEADER.names or ())
    for name in draw(st.lists(st.sampled_from(names), max_size=3)):
        lo, hi = _INT_RANGE[layout.HEADER.fields[name][0].str]  # type: ignore[index]
        near = int(header[name][0])
        header[name] = draw(st.integers(lo, hi) | st.integers(max(lo, near - 300), min(hi, near + 300)))
    for _ in range(draw(st.integers(0, 4))):
        data[draw(st.integers(0, data.size - 1))] = draw(st.integers(0, 255))
    return data


@settings(max_examples=300, deadline=None)
@given(corrupted_images())
def test_unpack_returns_or_raises_pack_error_for_any_corruption(data: np.ndarray) -> None:
    try:
        got = unpack(data.tobytes())
    except PackError:
        return
    assert all(0 <= i < len(got.tasks) for q in got.queues for i in q)
    assert got.data.size == got.header["data_bytes"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_sms", -1),
        ("num_sms", 10**6),
        ("n_instructions", -3),
        ("n_buffers", 10**6),
        ("instructions_off", 3),
        ("buffers_off", 10**9),
        ("queue_flat_off", 10**9),
        ("data_bytes", -1),
        ("counters_off", 0),
    ],
)
def test_unpack_refuses_a_bad_count_or_offset(field: str, value: int) -> None:
    data = _small_image().copy()
    data[: layout.HEADER.itemsize].view(layout.HEADER)[field] = value
    with pytest.raises(PackError, match="malformed ABI image"):
        unpack(data.tobytes())


@pytest.mark.parametrize(
    ("section", "value"), [("queue_flat_off", 99), ("queue_len_off", -1), ("queue_off_off", 7)]
)
def test_unpack_refuses_a_queue_outside_the_task_list(section: str, value: int) -> None:
    data = _small_image().copy()
    off = int(data[: layout.HEADER.itemsize].view(layout.HEADER)[section][0])
    data[off : off + 4].view("<i4")[0] = value
    with pytest.raises(PackError, match="malformed ABI image: a queue"):
        unpack(data.tobytes())
