"""Generate the validator conformance cases (families structure, deadlock, races, outputs).

Run ``python3 -m corpus.make_cases`` from the repository root to rewrite
``corpus/cases/<family>/*.json``; a test checks the committed files equal this
script's output. Every case starts from :func:`base_program` (a small valid program,
ids equal to positions) and applies one mutation. A *trigger* case expects its code;
its *near miss* (``…_ok.json``) is a valid program that differs in the same place
and must not produce the code. The memory-safety family has its own script
(``make_memory_cases.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amkspec.conformance.rules import validate_case_rules
from amkspec.ir import (
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    TARGETS,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    Page,
    PageAllocation,
    ScheduleConfig,
    Task,
    Wait,
    to_dict,
)
from amkspec.ir.atomic import write_atomic
from amkspec.proofs.diagnostics import CODES

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "corpus" / "cases"
K = InstructionKind
F32 = DType.F32
Mutation = Callable[[MegakernelProgram], None]


def base_program() -> MegakernelProgram:
    """embed → two GEMV column tiles under one counter → residual ADD into the IO_OUTPUT."""
    from amkspec.ir import ProgramBuilder

    b = ProgramBuilder()
    ids = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,))
    table = b.new_buffer("table", BufferKind.WEIGHT, F32, (16, 8))
    h = b.new_buffer("h", BufferKind.ACTIVATION, F32, (1, 8))
    w = b.new_buffer("w", BufferKind.WEIGHT, F32, (8, 8))
    y = b.new_buffer("y", BufferKind.ACTIVATION, F32, (1, 8))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, F32, (1, 8))
    t0 = b.add_task(K.EMBED, [ids, table], [h], params={"hidden": 8}, label="embed")
    c1 = b.new_counter("proj")
    for i in range(2):
        b.add_task(
            K.GEMV_TILE,
            [h, w],
            [y],
            out_counter=c1,
            waits=[b.after(t0)],
            params={"K": 8, "N_tile": 4, "n_off": 4 * i},
            label=f"proj[t{i}]",
        )
    b.add_task(K.ADD, [h, y], [out], waits=[b.after(t0), b.join(c1)], label="residual")
    return b.build(
        meta={"model": "conformance-base", "gpu": "h100"}, target=TARGETS["h100"], config=ScheduleConfig()
    )


# -- helpers used by mutations -----------------------------------------------------------------


def add_buffer(
    p: MegakernelProgram,
    name: str,
    kind: BufferKind,
    shape: tuple[int, ...],
    space: MemSpace = MemSpace.HBM,
    dtype: DType = F32,
) -> int:
    from amkspec.ir import Buffer

    source = name if kind in (BufferKind.WEIGHT, BufferKind.CONST) else None
    p.buffers.append(Buffer(len(p.buffers), name, kind, dtype, shape, space, source))
    return len(p.buffers) - 1


def add_counter(p: MegakernelProgram, note: str = "") -> int:
    p.counters.append(Counter(len(p.counters), 0, note))
    return len(p.counters) - 1


def add_task(
    p: MegakernelProgram,
    op: InstructionKind,
    inputs: list[int],
    outputs: list[int],
    waits: list[tuple[int, int]],
    params: dict[str, Any] | None = None,
    label: str = "",
    out_counter: int | None = None,
) -> int:
    oc = add_counter(p, label) if out_counter is None else out_counter
    p.tasks.append(
        Task(
            len(p.tasks),
            op,
            inputs,
            outputs,
            oc,
            [Wait(c, t) for c, t in waits],
            dict(params or {}),
            label=label,
        )
    )
    return len(p.tasks) - 1


def with_kv(p: MegakernelProgram, ordered: bool) -> None:
    """Append a K row to a KV cache, then copy the cache (after the append iff ``ordered``)."""
    kc = add_buffer(p, "kcache", BufferKind.KV_CACHE, (4, 1, 8))
    knew = add_buffer(p, "k_new", BufferKind.ACTIVATION, (1, 1, 8))
    snap = add_buffer(p, "k_snapshot", BufferKind.ACTIVATION, (4, 1, 8))
    e = add_task(p, K.EMBED, [0, 1], [knew], [], {"hidden": 8}, "k_embed")
    a = add_task(p, K.KV_APPEND, [knew, kc], [kc], [(p.tasks[e].out_counter, 1)], {"pos": 0}, "k_append")
    waits = [(p.tasks[a].out_counter, 1)] if ordered else []
    add_task(p, K.COPY, [kc], [snap], waits, {}, "k_snapshot")


def page(p: MegakernelProgram, mapping: dict[int, int], sizes: dict[int, int]) -> None:
    p.pages = PageAllocation(
        dict(mapping), [Page(pid, MemSpace.GLOBAL_SCRATCH, n) for pid, n in sizes.items()]
    )


def nop_after(p: MegakernelProgram, task: int, sm: int | None = None) -> int:
    t = add_task(p, K.NOP, [], [], [(p.tasks[task].out_counter, 1)], {}, "nop")
    p.tasks[t].sm = sm
    return t


def set_sms(p: MegakernelProgram, sms: dict[int, int]) -> None:
    for t, sm in sms.items():
        p.tasks[t].sm = sm


def gate_on_nop(p: MegakernelProgram, sm_proj: int, sm_nop: int) -> None:
    """A NOP at the end of the list that proj[t0] waits on; SM queues in list order."""
    n = add_task(p, K.NOP, [], [], [], {}, "late_nop")
    p.tasks[1].waits.append(Wait(p.tasks[n].out_counter, 1))
    set_sms(p, {1: sm_proj, n: sm_nop})


def gate_cross_sm(p: MegakernelProgram) -> None:
    """proj[t0] (SM 0) waits on x (SM 1) which waits on a NOP queued after proj[t0] on SM 0."""
    n = add_task(p, K.NOP, [], [], [], {}, "late_nop")
    x = add_task(p, K.NOP, [], [], [(p.tasks[n].out_counter, 1)], {}, "relay")
    p.tasks[1].waits.append(Wait(p.tasks[x].out_counter, 1))
    set_sms(p, {1: 0, n: 0, x: 1})


def kv_program(ordered: bool) -> Mutation:
    return lambda p: with_kv(p, ordered)


# -- the catalogue -----------------------------------------------------------------------------

Case = tuple[str, str, str, Mutation, Mutation, str]
"""(code, slug, description, trigger mutation, near-miss mutation, near-miss description)."""


def _set(path: str, value: Any) -> Mutation:
    """A mutation that sets ``p.<path>`` (dots and [i] indices) to ``value``."""

    def apply(p: MegakernelProgram) -> None:
        obj: Any = p
        parts = path.replace("[", ".[").split(".")
        for part in parts[:-1]:
            obj = obj[int(part[1:-1])] if part.startswith("[") else getattr(obj, part)
        last = parts[-1]
        if last.startswith("["):
            obj[int(last[1:-1])] = value
        elif isinstance(obj, dict):
            obj[last] = value
        else:
            setattr(obj, last, value)

    return apply


def _params(task: int, **changes: Any) -> Mutation:
    def apply(p: MegakernelProgram) -> None:
        for key, value in changes.items():
            if value is None:
                p.tasks[task].params.pop(key, None)
            else:
                p.tasks[task].params[key] = value

    return apply


def _seq(*steps: Mutation) -> Mutation:
    def apply(p: MegakernelProgram) -> None:
        for step in steps:
            step(p)

    return apply


def _noop(p: MegakernelProgram) -> None:
    del p


def _residual_waits(n: int) -> Mutation:
    """Pad the residual's waits with ``Wait(0, 1)`` up to ``n``."""
    return lambda p: p.tasks[3].waits.extend([Wait(0, 1)] * (n - len(p.tasks[3].waits)))


def _overlap_tiles(p: MegakernelProgram) -> None:
    p.tasks[1].params["N_tile"] = 8


def _separate_counters(p: MegakernelProgram, ordered: bool) -> None:
    c = add_counter(p, "proj1")
    p.tasks[2].out_counter = c
    p.tasks[3].waits = [Wait(0, 1), Wait(1, 1), Wait(c, 1)]
    if ordered:
        p.tasks[2].waits.append(Wait(1, 1))


CATALOGUE: list[Case] = [
    (
        "S101",
        "duplicate_counter_id",
        "an extra counter reuses id 1",
        lambda p: p.counters.append(Counter(1, 0, "dup")),
        lambda p: p.counters.append(Counter(len(p.counters), 0, "spare")),
        "an extra unused counter with a fresh id",
    ),
    (
        "S102",
        "id_not_position",
        "a counter with id 7 sits at list position 3",
        lambda p: p.counters.append(Counter(7, 0, "far")),
        lambda p: p.counters.append(Counter(len(p.counters), 0, "near")),
        "the extra counter's id is its position",
    ),
    (
        "S103",
        "counter_init",
        "counter 0 starts at 1",
        _set("counters[0].init", 1),
        _set("counters[0].note", "init stays 0"),
        "counter 0 keeps init 0",
    ),
    (
        "S104",
        "dangling_input",
        "the residual reads buffer 99",
        _set("tasks[3].inputs[1]", 99),
        _set("tasks[3].inputs", [4, 2]),
        "the residual reads existing buffers in the other order",
    ),
    (
        "S105",
        "dangling_wait_counter",
        "the residual also waits on counter 99",
        lambda p: p.tasks[3].waits.append(Wait(99, 1)),
        lambda p: p.tasks[3].waits.append(Wait(0, 1)),
        "the extra wait names an existing counter",
    ),
    (
        "S106",
        "too_many_waits",
        f"the residual has {ABI_MAX_WAITS + 1} waits",
        _residual_waits(ABI_MAX_WAITS + 1),
        _residual_waits(ABI_MAX_WAITS),
        f"the residual has exactly {ABI_MAX_WAITS} waits",
    ),
    (
        "S107",
        f"rank_{ABI_MAX_RANK + 1}_buffer",
        f"an unused buffer of rank {ABI_MAX_RANK + 1}",
        lambda p: add_buffer(p, "big", BufferKind.ACTIVATION, (1,) * ABI_MAX_RANK + (8,)),
        lambda p: add_buffer(p, "big", BufferKind.ACTIVATION, (1,) * (ABI_MAX_RANK - 1) + (8,)),
        f"the unused buffer has rank {ABI_MAX_RANK}",
    ),
    (
        "S108",
        "zero_threshold",
        "a wait with threshold 0",
        _set("tasks[1].waits[0].threshold", 0),
        _set("tasks[1].waits[0].threshold", 1),
        "threshold 1",
    ),
    (
        "S109",
        "add_three_inputs",
        "ADD with three inputs",
        _set("tasks[3].inputs", [2, 4, 4]),
        _seq(_set("tasks[3].op", K.MUL)),
        "MUL with two inputs",
    ),
    (
        "S110",
        "missing_K",
        "a GEMV tile without K",
        _params(1, K=None),
        _params(1, N=8),
        "a GEMV tile with an extra known param N",
    ),
    ("S111", "bool_param", "K = true", _params(1, K=True), _params(0, eps=1), "an int where a float belongs"),
    (
        "S112",
        "unknown_param",
        "an unknown param key (warning only)",
        _params(1, stride=2),
        _params(1, M=1),
        "a known param M",
    ),
    (
        "S113",
        "sm_out_of_range",
        "sm 132 on a 132-SM target",
        _set("tasks[0].sm", 132),
        _set("tasks[0].sm", 131),
        "sm 131",
    ),
    (
        "S114",
        "page_unknown_buffer",
        "the page table binds buffer 99",
        lambda p: page(p, {99: 0}, {0: 32}),
        lambda p: page(p, {2: 0}, {0: 32}),
        "the page table binds buffer h",
    ),
    (
        "S115",
        "page_too_small",
        "a 16-byte page holds a 32-byte buffer",
        lambda p: page(p, {2: 0}, {0: 16}),
        lambda p: page(p, {2: 0}, {0: 32}),
        "a 32-byte page",
    ),
    (
        "S116",
        "paged_weight",
        "a WEIGHT buffer bound to a page",
        lambda p: page(p, {3: 0}, {0: 256}),
        lambda p: page(p, {4: 0}, {0: 256}),
        "an ACTIVATION bound to the page",
    ),
    (
        "S117",
        "buffer_beyond_hbm",
        "an unused ACTIVATION of shape [2**31-1, 2**31-1] F32 on an 80 GB target",
        lambda p: add_buffer(p, "huge", BufferKind.ACTIVATION, (2**31 - 1, 2**31 - 1)),
        lambda p: add_buffer(p, "huge", BufferKind.ACTIVATION, (1 << 20, 1 << 10)),
        "an unused 4 GiB ACTIVATION on an 80 GB target",
    ),
    (
        "D201",
        "no_producer",
        "a wait on a counter nobody increments",
        lambda p: p.tasks[3].waits.append(Wait(add_counter(p, "orphan"), 1)),
        lambda p: add_counter(p, "orphan"),
        "the orphan counter exists but nobody waits on it",
    ),
    (
        "D202",
        "threshold_above_producers",
        "threshold 3 on a counter with 2 producers",
        _set("tasks[3].waits[1].threshold", 3),
        _set("tasks[3].waits[1].threshold", 2),
        "threshold 2",
    ),
    (
        "D203",
        "self_wait",
        "a tile waits on its own counter",
        lambda p: p.tasks[1].waits.append(Wait(1, 2)),
        lambda p: p.tasks[1].waits.append(Wait(0, 1)),
        "the tile waits twice on the embed",
    ),
    (
        "D204",
        "cycle",
        "the embed waits on the residual",
        lambda p: p.tasks[0].waits.append(Wait(2, 1)),
        lambda p: nop_after(p, 3),
        "a NOP after the residual",
    ),
    (
        "D205",
        "sm_queue_backward",
        "proj[t0] waits on a NOP queued after it on SM 0",
        lambda p: gate_on_nop(p, 0, 0),
        lambda p: gate_on_nop(p, 0, 1),
        "the NOP runs on SM 1",
    ),
    (
        "D205",
        "sm_queue_cross_sm",
        "a queue-order deadlock through a task on another SM",
        gate_cross_sm,
        lambda p: gate_on_nop(p, 1, 0),
        "proj[t0] on SM 1, the NOP on SM 0",
    ),
    (
        "R301",
        "partial_join",
        "threshold 1 on a counter with 2 producers",
        _set("tasks[3].waits[1].threshold", 1),
        _set("tasks[3].waits[0].threshold", 1),
        "threshold 1 on a single-producer counter",
    ),
    (
        "R302",
        "never_produced",
        "the residual reads an ACTIVATION nobody writes",
        lambda p: p.tasks[3].inputs.__setitem__(1, add_buffer(p, "z", BufferKind.ACTIVATION, (1, 8))),
        lambda p: p.tasks[3].inputs.__setitem__(1, add_buffer(p, "z", BufferKind.IO_INPUT, (1, 8))),
        "the unwritten buffer is an IO_INPUT",
    ),
    (
        "R303",
        "unordered_read",
        "the residual does not wait for the tiles",
        _set("tasks[3].waits", [Wait(0, 1)]),
        _set("tasks[3].waits", [Wait(1, 2)]),
        "the residual reads h through a transitive path only",
    ),
    (
        "R304",
        "self_read",
        "the residual reads its own output (stale data: an error)",
        _set("tasks[3].inputs", [2, 5]),
        _set("tasks[3].inputs", [4, 4]),
        "the residual reads y twice",
    ),
    (
        "R305",
        "kv_unordered",
        "a task reads a KV cache without waiting for the append",
        kv_program(False),
        kv_program(True),
        "the reader waits for the KV_APPEND",
    ),
    (
        "R306",
        "overlapping_tiles",
        "two tiles under one counter overlap",
        _overlap_tiles,
        lambda p: _separate_counters(p, True),
        "tiles on separate counters, totally ordered",
    ),
    (
        "R306",
        "unordered_counters",
        "disjoint tiles under different unordered counters",
        lambda p: _separate_counters(p, False),
        _noop,
        "disjoint tiles under one counter",
    ),
    (
        "R307",
        "write_weight",
        "a task writes a WEIGHT buffer",
        lambda p: add_task(
            p, K.COPY, [2], [add_buffer(p, "w2", BufferKind.WEIGHT, (1, 8))], [(0, 1)], {}, "copy"
        ),
        lambda p: add_task(
            p, K.COPY, [2], [add_buffer(p, "a2", BufferKind.ACTIVATION, (1, 8))], [(0, 1)], {}, "copy"
        ),
        "the COPY writes an ACTIVATION",
    ),
    (
        "R308",
        "uncovered_columns",
        "tiles cover columns [0, 6) of 8",
        _params(2, N_tile=2),
        _params(2, N_tile=4),
        "tiles cover all 8 columns",
    ),
    (
        "R309",
        "smem_two_sms",
        "an SMEM buffer used on SMs 0 and 1",
        _seq(_set("buffers[4].space", MemSpace.SMEM), lambda p: set_sms(p, {1: 0, 2: 1, 3: 0})),
        _seq(_set("buffers[4].space", MemSpace.SMEM), lambda p: set_sms(p, {0: 0, 1: 0, 2: 0, 3: 0})),
        "every user on SM 0",
    ),
    (
        "R310",
        "smem_unassigned",
        "an SMEM buffer whose users have no SM (warning only)",
        _set("buffers[4].space", MemSpace.SMEM),
        _set("buffers[4].space", MemSpace.GLOBAL_SCRATCH),
        "the buffer is in GLOBAL_SCRATCH",
    ),
    (
        "R311",
        "page_alias",
        "h and y share a page while h is still read",
        lambda p: page(p, {2: 0, 4: 0}, {0: 32}),
        lambda p: _seq(
            lambda q: add_task(
                q, K.COPY, [5], [add_buffer(q, "z", BufferKind.ACTIVATION, (1, 8))], [(2, 1)], {}, "copy_out"
            ),
            lambda q: page(q, {4: 0, 6: 0}, {0: 32}),
        )(p),
        "y and a buffer written after y's last use share the page",
    ),
    (
        "O501",
        "output_not_produced",
        "an IO_OUTPUT nobody writes",
        lambda p: add_buffer(p, "out2", BufferKind.IO_OUTPUT, (1, 8)),
        lambda p: add_buffer(p, "in2", BufferKind.IO_INPUT, (1, 8)),
        "an unused IO_INPUT",
    ),
    (
        "O502",
        "gpu_label",
        "meta gpu a100 on an h100 target (warning only)",
        _set("meta.gpu", "a100"),
        _set("meta.gpu", "h100"),
        "meta gpu h100",
    ),
    (
        "O503",
        "block_size",
        "threads_per_block 100",
        _set("config.threads_per_block", 100),
        _set("config.threads_per_block", 128),
        "threads_per_block 128",
    ),
    (
        "O504",
        "smem_optin",
        "smem_bytes_per_block above the h100 opt-in limit",
        _set("config.smem_bytes_per_block", 232449),
        _set("config.smem_bytes_per_block", 232448),
        "exactly the opt-in limit",
    ),
]
"""Every validator code except S199 (an internal error is never produced on purpose)."""

FAMILY_DIRS = {"S": "structure", "D": "deadlock", "R": "races", "O": "outputs"}


def _case(
    description: str, clause: str, prog: MegakernelProgram, verdict: str, codes: list[str], absent: list[str]
) -> dict[str, Any]:
    return {
        "kind": "validate",
        "description": description,
        "rules": validate_case_rules(codes + absent),
        "clauses": [clause],
        "program": to_dict(prog),
        "expect": {"verdict": verdict, "codes": codes, "absent_codes": absent},
    }


def _verdict_with(code: str) -> str:
    return "accepted" if CODES[code].severity.value == "warning" else "rejected"


def build_cases() -> dict[str, str]:
    """Relative path under ``corpus/cases`` → file text, for every catalogue entry."""
    files: dict[str, str] = {}
    for code, slug, description, trigger, near, near_description in CATALOGUE:
        clause = CODES[code].clause
        folder = FAMILY_DIRS[code[0]]
        bad, good = base_program(), base_program()
        trigger(bad)
        near(good)
        stem = f"{folder}/{code}_{slug}"
        files[f"{stem}.json"] = _text(_case(description, clause, bad, _verdict_with(code), [code], []))
        files[f"{stem}_ok.json"] = _text(
            _case(f"near miss of {code}: {near_description}", clause, good, "accepted", [], [code])
        )
    return files


def _text(case: dict[str, Any]) -> str:
    return json.dumps(case, indent=2) + "\n"


def main() -> None:
    files = build_cases()
    for rel, text in files.items():
        path = CASES_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    print(f"wrote {len(files)} cases under {CASES_DIR}")


if __name__ == "__main__":
    main()
