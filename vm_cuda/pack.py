"""The one packer: a validated program + bound buffers → the ABI image bytes (spec §8.2).

The CPU build and the GPU loader consume the same bytes (after the same
:func:`relocate`). The layout is ``vm_cuda/abi.h``'s: header, status, buffer table,
instructions (tasks, then FUSED recipe steps), per-SM queues, counters, data.
A program ``validate()`` rejects is refused with :class:`RefusedProgram`, unless the
test-only ``_unsafe_skip_validation`` is passed (used to force a deadlock past the validator).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    PARAM_DEFAULTS,
    PARAM_FIELDS,
    PARAM_LAYOUT,
    WEIGHT_KINDS,
    AmkspecError,
    Buffer,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Task,
)
from amkspec.ir.graph import writers_by_buffer
from amkspec.ir.opcodes import RECIPE_DTYPES, opcode_of
from amkspec.ir.snapshot import snapshot
from amkspec.semantics import storage_shape, torch_dtype
from amkspec.semantics.fused import check_recipe
from amkspec.semantics.registry import OpError
from amkspec.vm.errors import RefusedProgram
from vm_cuda import layout
from vm_cuda.queues import QueueError, build_queues, grid_size

ABI_MAJOR, ABI_MINOR = 0, 2
"""``AMK_ABI_VERSION_MAJOR/MINOR`` (amkspec.ir.ABI_VERSION "0.2")."""

SCRATCH_DTYPES: dict[str, int] = {
    name: layout.DT_F64 if dtype is None else int(dtype) for name, dtype in RECIPE_DTYPES.items()
}
"""FUSED ``out_dtype`` name → ABI dtype code (:data:`amkspec.ir.opcodes.RECIPE_DTYPES`; float64 is
the ABI-only ``AMK_DT_F64``)."""


class PackError(AmkspecError, ValueError):
    """A program (forced past the validator) that the ABI image cannot represent."""


REGIONS = ("resident", "kv", "zeroed", "outputs", "inputs")
"""The data section's regions, in address order (spec §8.7, resident state): WEIGHT and CONST
storage (uploaded when the weights change), KV_CACHE (kept on the device across launches),
ACTIVATION and FUSED scratch (zeroed before each launch), IO_OUTPUT (zeroed, read back after
each launch), IO_INPUT (written before each launch). A WEIGHT or CONST buffer a task writes
(only in a program forced past the validator) is treated as an input."""


@attrs.frozen
class Slot:
    """Where one buffer-table entry's storage lives in the data section, and its region."""

    offset: int
    nbytes: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    region: str = "zeroed"


@attrs.frozen
class _Scratch:
    """A FUSED recipe scratch buffer appended to the table."""

    shape: tuple[int, ...]
    code: int


def _torch_of(code: int) -> torch.dtype:
    return torch.float64 if code == layout.DT_F64 else torch_dtype(DType(code))


def _storage_of(code: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape) if code == layout.DT_F64 else storage_shape(DType(code), tuple(shape))


def _strides(shape: Sequence[int]) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * int(shape[i + 1])
    return out


def marshal_params(op: InstructionKind, params: Mapping[str, Any]) -> tuple[tuple[Any, ...], int]:
    """One ``amk_params_t`` row (PARAM_LAYOUT order, PARAM_DEFAULTS for absent keys, else 0) and
    its ``param_mask`` (bit i: PARAM_LAYOUT[i] given or defaulted)."""
    given = {**PARAM_DEFAULTS.get(op, {}), **{k: v for k, v in params.items() if k in PARAM_FIELDS}}
    row = []
    mask = 0
    for i, name in enumerate(PARAM_LAYOUT):
        value = given.get(name, 0)
        row.append(int(value) if PARAM_FIELDS[name] == "i" else float(value))
        mask |= (name in given) << i
    return tuple(row), mask


WATCHDOG_MAX_S = (2**63 - 1) / 1e9
"""The longest watchdog the image header holds: ``timeout_ns`` is an int64 (spec §8.5)."""


def watchdog_ns(timeout_s: Any) -> int:
    """The header's ``timeout_ns`` for a watchdog of ``timeout_s`` seconds: 0 turns it off (``abi.h``),
    a positive time is at least 1 ns; anything but a number in ``[0, WATCHDOG_MAX_S)`` (``nan``,
    ``inf``, a negative number, a string) is a ``ValueError`` naming it."""
    number = isinstance(timeout_s, numbers.Real) and not isinstance(timeout_s, bool)
    if not number or not 0 <= timeout_s < WATCHDOG_MAX_S:
        raise ValueError(f"timeout_s must be seconds in [0, {WATCHDOG_MAX_S:.4g}), not {timeout_s!r}")
    return max(int(timeout_s * 1e9), 1) if timeout_s > 0 else 0


def refuse_rejected(program: MegakernelProgram, validation: Any = None) -> Any:
    """``validate(program)`` (or the given result of it: :func:`amkspec.proofs.validated`);
    :class:`RefusedProgram` if it rejects."""
    from amkspec.proofs import validated

    validation = validated(program, validation)
    if not validation.ok:
        raise RefusedProgram(validation, vm="MegakernelVM")
    return validation


class Packer:
    """Everything about a program's image that does not depend on the bound tensors.

    Build once per program, then :meth:`image` per launch. The packer validates a snapshot of
    ``program`` (:func:`amkspec.ir.snapshot.snapshot`) and packs only that, so a change the caller
    makes afterwards never reaches an image unvalidated (spec §2.4). ``_validation`` is
    :class:`~vm_cuda.vm.MegakernelVM`'s alone: the result of ``validate()`` on the snapshot it
    took itself and hands over, which is then packed as given.
    """

    def __init__(
        self,
        program: MegakernelProgram,
        *,
        num_sms: int | None = None,
        max_blocks: int | None = None,
        threads_per_block: int | None = None,
        _validation: Any = None,
        _unsafe_skip_validation: bool = False,
    ) -> None:
        if _validation is None:
            program = snapshot(program)
        if not _unsafe_skip_validation:
            refuse_rejected(program, _validation)
        self.program = program
        self.buf_index = {b.id: i for i, b in enumerate(program.buffers)}
        self.ctr_index = {c.id: i for i, c in enumerate(program.counters)}
        try:
            self.num_sms = num_sms or grid_size(program, max_blocks)
            self.queues = build_queues(program, self.num_sms, _unsafe_skip_validation)
        except QueueError as exc:
            raise PackError(str(exc)) from exc
        self.threads_per_block = threads_per_block or (
            program.config.threads_per_block if program.config is not None else 256
        )
        self.written = set(writers_by_buffer(program))
        self.scratch: list[_Scratch] = []
        self.instructions = self._instructions()
        self._table, self._slots, self._data_bytes = self._buffer_table()

    # -- instructions ----------------------------------------------------------------------

    def _index(self, table: Mapping[int, int], ident: Any, what: str, task: Task) -> int:
        if ident not in table:
            raise PackError(
                f"task {task.describe()} names {what} {ident!r}, which the program does not declare"
            )
        return table[ident]

    def _instructions(self) -> np.ndarray:
        tasks = self.program.tasks
        sm_of = {i: sm for sm, queue in enumerate(self.queues) for i in queue}
        rows: list[np.ndarray] = []
        steps: list[np.ndarray] = []
        for i, task in enumerate(tasks):
            row = self._row(
                task,
                task.op,
                [self._index(self.buf_index, b, "buffer", task) for b in task.inputs],
                [self._index(self.buf_index, b, "buffer", task) for b in task.outputs],
                task.params,
            )
            self._waits(row, task)
            row["out_counter"] = self._index(self.ctr_index, task.out_counter, "counter", task)
            row["sm"] = sm_of[i]
            if task.op is InstructionKind.FUSED:
                recipe = self._recipe(task, row)
                row["step_first"] = len(tasks) + len(steps)
                row["n_steps"] = len(recipe)
                steps.extend(recipe)
            rows.append(row)
        self.n_steps = len(steps)
        table = np.zeros(max(len(rows) + len(steps), 1), dtype=layout.INSTRUCTION)
        for k, row in enumerate(rows + steps):
            table[k] = row
        return table

    def _row(
        self, task: Task, op: InstructionKind, ins: list[int], outs: list[int], params: Mapping[str, Any]
    ) -> np.ndarray:
        if len(ins) > ABI_MAX_INPUTS or len(outs) > ABI_MAX_OUTPUTS:
            raise PackError(f"task {task.describe()} has more operands than the ABI holds")
        row = np.zeros((), dtype=layout.INSTRUCTION)
        row["op"], row["n_inputs"], row["n_outputs"] = int(op), len(ins), len(outs)
        row["inputs"][: len(ins)] = ins
        row["outputs"][: len(outs)] = outs
        try:
            row["params"], row["param_mask"] = marshal_params(op, params)
        except (TypeError, ValueError, OverflowError) as exc:
            raise PackError(f"task {task.describe()}: a param does not fit amk_params_t ({exc})") from exc
        return row

    def _waits(self, row: np.ndarray, task: Task) -> None:
        if len(task.waits) > ABI_MAX_WAITS:
            raise PackError(
                f"task {task.describe()} has {len(task.waits)} waits; the ABI holds {ABI_MAX_WAITS}"
            )
        row["n_waits"] = len(task.waits)
        for k, wait in enumerate(task.waits):
            row["wait_counter"][k] = self._index(self.ctr_index, wait.counter, "counter", task)
            row["wait_threshold"][k] = wait.threshold

    def _recipe(self, task: Task, row: np.ndarray) -> list[np.ndarray]:
        """The FUSED task's steps as instructions over table indices (scratch appended to the table)."""
        try:
            steps = check_recipe(task.params.get("recipe"), len(task.inputs))
            scratch: dict[int, int] = {}
            out_rows = []
            for step in steps:
                args = [
                    int(row["inputs"][ref["in"]]) if "in" in ref else scratch[ref["s"]]
                    for ref in step.get("args", [])
                ]
                out = step.get("out", "final")
                if out in ("final", -1):
                    target = int(row["outputs"][0])
                elif out in scratch:
                    target = scratch[out]
                else:
                    target = scratch[out] = self._new_scratch(step, args)
                op = opcode_of(step["op"])
                step_row = self._row(task, op, args, [target], step.get("params", {}))
                step_row["sm"] = row["sm"]
                out_rows.append(step_row)
            return out_rows
        except (OpError, KeyError, ValueError, TypeError) as exc:
            raise PackError(f"task {task.describe()}: FUSED recipe cannot be packed ({exc})") from exc

    def _new_scratch(self, step: Mapping[str, Any], args: list[int]) -> int:
        first = self._shape_code(args[0]) if args else None
        shape = step.get("out_shape")
        if shape is None:
            if first is None:
                raise PackError("a FUSED scratch without out_shape needs an argument")
            shape = first[0]
        code = (
            SCRATCH_DTYPES[step["out_dtype"]] if "out_dtype" in step else (first[1] if first else DType.F32)
        )
        self.scratch.append(_Scratch(tuple(int(d) for d in shape), int(code)))
        return len(self.program.buffers) + len(self.scratch) - 1

    def _shape_code(self, index: int) -> tuple[tuple[int, ...], int]:
        if index < len(self.program.buffers):
            buf = self.program.buffers[index]
            return buf.shape, int(buf.dtype)
        s = self.scratch[index - len(self.program.buffers)]
        return s.shape, s.code

    # -- buffers and data ------------------------------------------------------------------

    def _entries(self) -> list[tuple[tuple[int, ...], int, int, int]]:
        """(shape, dtype code, space, kind) of every table entry: program buffers, then scratch."""
        out = [(b.shape, int(b.dtype), int(b.space), int(b.kind)) for b in self.program.buffers]
        out += [
            (s.shape, s.code, int(MemSpace.GLOBAL_SCRATCH), int(BufferKind.ACTIVATION)) for s in self.scratch
        ]
        return out

    def _region(self, k: int, kind: int) -> str:
        """The data region of table entry ``k`` (see :data:`REGIONS`)."""
        kind_ = BufferKind(kind)
        if kind_ in WEIGHT_KINDS:
            written = k < len(self.program.buffers) and self.program.buffers[k].id in self.written
            return "inputs" if written else "resident"
        return {
            BufferKind.KV_CACHE: "kv", BufferKind.IO_OUTPUT: "outputs", BufferKind.IO_INPUT: "inputs"
        }.get(kind_, "zeroed")

    def _buffer_table(self) -> tuple[np.ndarray, list[Slot], int]:
        entries = self._entries()
        table = np.zeros(max(len(entries), 1), dtype=layout.BUFFER)
        pages = self._page_of()
        page_at: dict[int, int] = {}
        page_bytes = self._page_bytes(pages)
        slots: dict[int, Slot] = {}
        cursor = 0
        self.region_bounds: dict[str, tuple[int, int]] = {}
        regions = [self._region(k, e[3]) for k, e in enumerate(entries)]
        for region in REGIONS:
            start = cursor
            for k in (k for k, r in enumerate(regions) if r == region):
                shape, code = entries[k][0], entries[k][1]
                if len(shape) > ABI_MAX_RANK:
                    raise PackError(f"buffer {k} has rank {len(shape)}; the ABI holds {ABI_MAX_RANK}")
                sshape = _storage_of(code, shape)
                nbytes = math.prod(sshape) * _torch_of(code).itemsize
                if k in pages:
                    page = pages[k]
                    if page not in page_at:
                        page_at[page] = cursor
                        cursor += layout.align(max(page_bytes[page], 1))
                    offset = page_at[page]
                else:
                    offset = cursor
                    cursor += layout.align(max(nbytes, 1))
                slots[k] = Slot(offset, nbytes, sshape, _torch_of(code), region)
            self.region_bounds[region] = (start, cursor)
        for k, (shape, code, space, kind) in enumerate(entries):
            rec = table[k]
            offset = slots[k].offset
            rec["ptr"] = offset
            rec["numel"] = math.prod(shape)
            rec["rank"], rec["dtype"], rec["space"], rec["kind"] = len(shape), code, space, kind
            rec["shape"][: len(shape)] = shape
            rec["stride"][: len(shape)] = _strides(shape)
        return table, [slots[k] for k in range(len(entries))], cursor

    def _page_of(self) -> dict[int, int]:
        """Table index → page id for the ACTIVATION buffers the page allocation shares (spec §1.6)."""
        pages = self.program.pages
        if pages is None:
            return {}
        return {
            self.buf_index[bid]: pid
            for bid, pid in pages.buffer_to_page.items()
            if bid in self.buf_index
            and self.program.buffers[self.buf_index[bid]].kind is BufferKind.ACTIVATION
        }

    def _page_bytes(self, pages: Mapping[int, int]) -> dict[int, int]:
        sizes = {p.id: p.nbytes for p in (self.program.pages.pages if self.program.pages else [])}
        for k, pid in pages.items():
            buf = self.program.buffers[k]
            sizes[pid] = max(sizes.get(pid, 0), _bytes_of(buf))
        return sizes

    @property
    def slots(self) -> list[Slot]:
        """Where each table entry's storage lives, relative to the data section."""
        return self._slots

    def image(self, bound: Mapping[int, torch.Tensor], *, timeout_s: float = 0.0) -> Image:
        """The image for one launch: ``bound`` maps buffer id → its tensor (amkspec.vm.binding.bind)."""
        n_ins = len(self.program.tasks)
        n_steps = self.n_steps
        counts = {
            "num_sms": self.num_sms,
            "n_buffers": len(self._slots),
            "n_counters": len(self.program.counters),
            "n_instructions": n_ins,
            "n_steps": n_steps,
            "data_bytes": self._data_bytes,
        }
        offsets: dict[str, int] = {}
        cursor = layout.align(layout.HEADER.itemsize)
        for name, size in section_sizes(counts):
            offsets[name] = cursor
            cursor += layout.align(max(size, 1))
        data = np.zeros(cursor, dtype=np.uint8)
        header = np.zeros((), dtype=layout.HEADER)
        header["magic"], header["abi_major"], header["abi_minor"] = layout.IMAGE_MAGIC, ABI_MAJOR, ABI_MINOR
        header["threads_per_block"], header["image_bytes"] = self.threads_per_block, cursor
        header["timeout_ns"] = watchdog_ns(timeout_s)
        for name, off in {**counts, **offsets}.items():
            header[name] = off
        _put(data, 0, header)
        table = self._table.copy()
        table["ptr"] += offsets["data_off"]
        _put(data, offsets["buffers_off"], table)
        _put(data, offsets["instructions_off"], self.instructions)
        lens = np.array([len(q) for q in self.queues], dtype="<i4")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype("<i4")
        _put(data, offsets["queue_off_off"], starts)
        _put(data, offsets["queue_len_off"], lens)
        _put(
            data, offsets["queue_flat_off"], np.array([i for q in self.queues for i in q] or [0], dtype="<i4")
        )
        counters = np.array([c.init for c in self.program.counters] or [0], dtype="<u4")
        _put(data, offsets["counters_off"], counters)
        for k, buf in enumerate(self.program.buffers):
            tensor = bound.get(buf.id)
            if tensor is None:
                raise PackError(f"buffer {buf.name!r} is not bound")
            raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
            slot = self._slots[k]
            if raw.size != slot.nbytes:
                raise PackError(f"buffer {buf.name!r}: {raw.size} bytes bound, {slot.nbytes} expected")
            start = offsets["data_off"] + slot.offset
            data[start : start + slot.nbytes] = raw
        return Image(data, offsets["data_off"], self._slots, self.queues)


def _bytes_of(buf: Buffer) -> int:
    return math.prod(storage_shape(buf.dtype, buf.shape)) * torch_dtype(buf.dtype).itemsize


def _put(data: np.ndarray, offset: int, value: np.ndarray) -> None:
    raw = np.ascontiguousarray(value).view(np.uint8).reshape(-1)
    data[offset : offset + raw.size] = raw


@attrs.define
class Image:
    """One launch's ABI image: ``data`` (uint8) and where every buffer's storage lies in it."""

    data: np.ndarray
    data_off: int
    slots: list[Slot]
    queues: list[list[int]]

    def tobytes(self) -> bytes:
        """The image bytes (ptr fields image-relative)."""
        return self.data.tobytes()

    def tensor(self, index: int, data: np.ndarray | None = None) -> torch.Tensor:
        """A copy of table entry ``index``'s storage, read from ``data`` (default: this image)."""
        src = self.data if data is None else data
        slot = self.slots[index]
        start = self.data_off + slot.offset
        raw = torch.from_numpy(src[start : start + slot.nbytes].copy())
        return raw.view(slot.dtype).reshape(slot.shape)


def relocate(data: np.ndarray, base: int) -> None:
    """Turn every image-relative ``ptr`` of the buffer table into ``base + offset`` (in place)."""
    header = data[: layout.HEADER.itemsize].view(layout.HEADER)[0]
    start = int(header["buffers_off"])
    n = int(header["n_buffers"])
    table = data[start : start + n * layout.BUFFER.itemsize].view(layout.BUFFER)
    table["ptr"] += np.uint64(base)


def pack(
    program: MegakernelProgram,
    bound: Mapping[int, torch.Tensor],
    *,
    timeout_s: float = 0.0,
    num_sms: int | None = None,
    _unsafe_skip_validation: bool = False,
) -> Image:
    """Validate (unless the test-only override is given), then build the image for ``bound``."""
    packer = Packer(program, num_sms=num_sms, _unsafe_skip_validation=_unsafe_skip_validation)
    return packer.image(bound, timeout_s=timeout_s)


@attrs.frozen
class Unpacked:
    """An image read back section by section (what the round-trip test compares with the program)."""

    header: dict[str, int]
    buffers: np.ndarray
    tasks: np.ndarray
    steps: np.ndarray
    queues: list[list[int]]
    counters: np.ndarray
    data: np.ndarray

    def storage(self, index: int, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of table entry ``index``'s storage (ptr must be image-relative)."""
        start = int(self.buffers[index]["ptr"]) - self.header["data_off"]
        return self.data[start : start + nbytes]


COUNTS = ("num_sms", "n_buffers", "n_counters", "n_instructions", "n_steps", "data_bytes")
"""The header fields that size the sections (never negative)."""


def section_sizes(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """Each section's header offset field and its byte size, in image order (spec §8.2), from
    the :data:`COUNTS`: what the packer lays out and what :func:`unpack` checks."""
    return [
        ("status_off", layout.STATUS.itemsize),
        ("buffers_off", counts["n_buffers"] * layout.BUFFER.itemsize),
        ("instructions_off", (counts["n_instructions"] + counts["n_steps"]) * layout.INSTRUCTION.itemsize),
        ("queue_off_off", 4 * counts["num_sms"]),
        ("queue_len_off", 4 * counts["num_sms"]),
        ("queue_flat_off", 4 * max(counts["n_instructions"], 1)),
        ("counters_off", 4 * max(counts["n_counters"], 1)),
        ("data_off", counts["data_bytes"]),
    ]


def _check_layout(header: Mapping[str, int], size: int) -> None:
    """:class:`PackError` unless every count is >= 0 and the sections lie in image order, each
    ``IMAGE_ALIGN``-aligned, after the header and inside the ``size``-byte image."""
    for name in COUNTS:
        if header[name] < 0:
            raise PackError(f"malformed ABI image: {name} is {header[name]}")
    end = layout.HEADER.itemsize
    for name, nbytes in section_sizes(header):
        off = header[name]
        if off % layout.IMAGE_ALIGN or off < end or off + nbytes > size:
            raise PackError(
                f"malformed ABI image: {name} {off} ({nbytes} bytes) is unaligned, overlaps the "
                f"previous section or ends past the {size}-byte image"
            )
        end = off + nbytes


def _queues(offs: np.ndarray, lens: np.ndarray, flat: np.ndarray, n_tasks: int) -> list[list[int]]:
    """The per-SM queues; :class:`PackError` if one reaches outside the flat list or names no task."""
    queues = []
    for o, n in zip(offs.tolist(), lens.tolist(), strict=True):
        if o < 0 or n < 0 or o + n > n_tasks:
            raise PackError(f"malformed ABI image: a queue at {o} of length {n} in a list of {n_tasks}")
        queue = flat[o : o + n].tolist()
        if any(not 0 <= i < n_tasks for i in queue):
            raise PackError(f"malformed ABI image: a queue names a task outside 0..{n_tasks - 1}")
        queues.append(queue)
    return queues


def unpack(image: bytes | np.ndarray) -> Unpacked:
    """Parse image bytes (image-relative ptrs) back into its sections; :class:`PackError` if the
    magic or size is wrong, a count is negative, a section is unaligned, out of order or outside
    the image, or a queue reaches outside the task list."""
    data = np.frombuffer(image, dtype=np.uint8) if isinstance(image, bytes) else image
    if data.size < layout.HEADER.itemsize:
        raise PackError("an ABI image is at least a header long")
    h = data[: layout.HEADER.itemsize].view(layout.HEADER)[0]
    header = {name: int(h[name]) for name in layout.HEADER.names or ()}
    if header["magic"] != layout.IMAGE_MAGIC or header["image_bytes"] != data.size:
        raise PackError("not an ABI image (bad magic or size)")
    _check_layout(header, data.size)

    def section(name: str, dtype: Any, count: int) -> np.ndarray:
        start = header[name]
        return data[start : start + count * np.dtype(dtype).itemsize].view(dtype)

    n_tasks, n_sms = header["n_instructions"], header["num_sms"]
    ins = section("instructions_off", layout.INSTRUCTION, n_tasks + header["n_steps"])
    offs, lens = section("queue_off_off", "<i4", n_sms), section("queue_len_off", "<i4", n_sms)
    queues = _queues(offs, lens, section("queue_flat_off", "<i4", max(n_tasks, 1)), n_tasks)
    start = header["data_off"]
    return Unpacked(
        header,
        section("buffers_off", layout.BUFFER, header["n_buffers"]),
        ins[:n_tasks],
        ins[n_tasks:],
        queues,
        section("counters_off", "<u4", header["n_counters"]),
        data[start : start + header["data_bytes"]],
    )
