"""The independent certificate checker (spec §2, §3): trust nothing but the IR types.

A certificate (built by :mod:`amkspec.evidence.certificate`) claims that one program is
deadlock-free and race-free. This module re-derives, from the program alone, every
obligation behind that claim, with its **own** element-region arithmetic, and checks the
certificate's evidence against them. It shares no code with the certifier or the
validator: only ``amkspec.ir`` (records, enums, the opcode registry, canonical JSON).

What it checks, in time linear in the program plus the certificate (plus a sort):

* **well-formedness it relies on** (spec §1): ids equal to list positions, every reference resolves,
  ABI caps and arity, required params, the ABI rank cap, positive int thresholds, counter
  ``init`` 0 (spec §1.5, §2.3), a threshold on a shared counter equal to its producer
  count (all-join, §3.3), SM in range, on-chip buffers private to one SM (§1.6), no write
  to a read-only kind (WEIGHT, CONST, IO_INPUT: their readers take no dependency);
* **deadlock-freedom** (§3.2): ``order`` is a complete execution (every wait met by the
  tasks before it, each SM's queue in task-list order). Counters only grow, so from any
  reachable state the first unstarted task of ``order`` can always start;
* **race-freedom** (§2.2, §3.3): every element a task reads of a transient buffer is
  written only by tasks that *happen before* it, and (ACTIVATION, IO_OUTPUT) some of
  them write it: coverage, self-reads and never-produced buffers included. Each IO_OUTPUT
  has a producer and is read in full by the host. Two writers of overlapping elements are ordered
  by happens-before. KV_CACHE reads cover the attention window only; rows no task
  appends this launch hold the previous launch's state. A FUSED task writes what its recipe's
  final steps write; one the checker cannot bound counts as the whole buffer for ordering and
  as no element for coverage;
* writers of one buffer that signal different counters are totally ordered, and the
  schedule can launch (block size, shared memory; §3.5, §5.1);
* **pages** (§1.6, §3.3): the occupants of one page come in a declared order, every use of
  one happens before every write of the next, and each page is large enough.

Happens-before is the spec's: the transitive closure of dependency edges whose wait
needs **every** producer of the counter (threshold ≥ producer count). Same-SM order is
not happens-before (spec §2.1 makes only counter increments release writes); it counts
only for the execution order. Each happens-before claim comes as a path of task ids
in the certificate; the checker verifies every hop.

Outside its scope (the certificate says nothing about them): the typing rules of
memory safety beyond region bounds (dtypes, reduction lengths, broadcast shapes, recipes:
M403–M454). Region bounds include a GEMM tile's row claim (``m_off``/``M_tile``, M401). See
``docs/guides/proofs.md``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterator
from typing import Any, TypeGuard

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    MAX_THREADS_PER_BLOCK,
    OP_REGISTRY,
    PARAM_FIELDS,
    WARP,
    BufferKind,
    DType,
    InstructionKind,
    MegakernelProgram,
    MemSpace,
    dumps,
)
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.limits import FLOAT32_MAX, MAX_BUFFER_BYTES_NO_TARGET
from amkspec.ir.opcodes import INT32_MAX, INT32_MIN, opcode_of

FORMAT = "amkspec-certificate"
VERSION = 2

_TRANSIENT = (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT, BufferKind.KV_CACHE)
_READ_ONLY = (BufferKind.WEIGHT, BufferKind.CONST, BufferKind.IO_INPUT)
_ON_CHIP = (MemSpace.SMEM, MemSpace.REGISTER)
_CAPS = {"inputs": ABI_MAX_INPUTS, "outputs": ABI_MAX_OUTPUTS, "waits": ABI_MAX_WAITS}

Box = tuple[tuple[int, int], ...]
"""An element region: one half-open interval per dimension of the buffer."""


class CertificateRefused(ValueError):
    """The certificate does not prove the program safe (or is not a certificate at all)."""


class MalformedCertificate(CertificateRefused):
    """The input is not a certificate: wrong JSON types, missing keys, another format."""


# -- element regions (spec §7: what each opcode reads and writes) ---------------------------------


def _int(value: Any) -> TypeGuard[int]:
    return type(value) is int


def _full(shape: tuple[int, ...]) -> Box:
    return tuple((0, d) for d in shape)


def _inside(box: Box, shape: tuple[int, ...]) -> bool:
    return all(0 <= lo <= hi <= d for (lo, hi), d in zip(box, shape, strict=True))


def _empty(box: Box) -> bool:
    return any(lo >= hi for lo, hi in box)


def _meet(a: Box, b: Box) -> bool:
    return all(x0 < y1 and y0 < x1 for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _param(task: Any, key: str, default: Any = None) -> Any:
    value = task.params.get(key, default) if isinstance(task.params, dict) else default
    if not _int(value):
        raise CertificateRefused(f"task {task.id}: param {key} is not an int")
    return value


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


class _Regions:
    """Element regions read and written by each task, computed here from the opcode's params."""

    def __init__(self, shapes: dict[int, tuple[int, ...]]) -> None:
        self.shapes = shapes

    def writes(self, task: Any) -> Iterator[tuple[int, Box, bool]]:
        """``(buffer, box, bounded)`` for each non-empty box the task writes. ``bounded`` is False
        for a FUSED write the checker cannot bound: the box is then the whole buffer, an
        over-statement that counts for ordering but covers nothing (spec §3.3)."""
        for bid in dict.fromkeys(task.outputs):
            shape = self.shapes[bid]
            if task.op is InstructionKind.FUSED:
                boxes = _fused_writes(task, shape)
                bounded = boxes is not None
                boxes = [_full(shape)] if boxes is None else boxes
            else:
                boxes, bounded = [self._write(task, shape)], True
            for box in dict.fromkeys(boxes):
                if not _inside(box, shape):
                    raise CertificateRefused(
                        f"task {task.id} writes outside buffer {bid} (shape {list(shape)})"
                    )
                if not _empty(box):
                    yield bid, box, bounded

    def _write(self, task: Any, shape: tuple[int, ...]) -> Box:
        op = task.op
        if op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE):
            off, width = _param(task, "n_off"), _param(task, "N_tile")
            if not shape or width <= 0:
                raise CertificateRefused(f"task {task.id}: tile of width {width} in a rank-0 or empty shape")
            if op is InstructionKind.GEMM_TILE:
                _check_rows(task, shape)
            return (*_full(shape[:-1]), (off, off + width))
        if op is InstructionKind.KV_APPEND and len(shape) in (3, 4):
            pos = _param(task, "pos")
            rows = 1 if len(shape) == 4 else self._appended_rows(task, shape)
            return (*_full(shape[:-3]), (pos, pos + rows), *_full(shape[-2:]))
        return _full(shape)

    def _appended_rows(self, task: Any, shape: tuple[int, ...]) -> int:
        row = shape[-2] * shape[-1]
        new = _numel(self.shapes[task.inputs[0]]) if task.inputs else 0
        if row == 0 or new % row:
            raise CertificateRefused(f"task {task.id}: KV_APPEND of {new} elements is not whole cache rows")
        return new // row

    def reads(self, task: Any) -> Iterator[tuple[int, Box]]:
        if task.outputs and not any(True for _ in self.writes(task)):
            return  # a task that writes no element reads none that matters (spec §3.3)
        seen: set[int] = set()
        for slot, bid in enumerate(task.inputs):
            if bid in seen:
                continue
            seen.add(bid)
            shape = self.shapes[bid]
            box = self._read(task, slot, bid, shape)
            if box is None:
                continue
            if not _inside(box, shape):
                raise CertificateRefused(f"task {task.id} reads outside buffer {bid} (shape {list(shape)})")
            if not _empty(box):
                yield bid, box

    def _read(self, task: Any, slot: int, bid: int, shape: tuple[int, ...]) -> Box | None:
        op = task.op
        if op is InstructionKind.KV_APPEND and slot == 1 and bid in task.outputs:
            return None  # the cache operand is declared for ordering only: nothing is read from it
        if op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE) and slot >= 1 and shape:
            off, width = _param(task, "n_off"), _param(task, "N_tile")
            return ((off, off + width), *_full(shape[1:]))  # weight (scale, bias) rows of the tile
        if op is InstructionKind.FUSED and slot not in _recipe_inputs(task, slot):
            return None  # no step of the recipe takes this operand
        if op is InstructionKind.ATTENTION_TILE and slot == 3:
            return None  # a fourth operand is ignored by the semantics
        if op is InstructionKind.ATTENTION_TILE and slot in (1, 2) and len(shape) in (3, 4):
            start = _param(task, "kv_start", 0)
            length = _param(task, "kv_len", shape[-3])
            return (*_full(shape[:-3]), (start, start + length), *_full(shape[-2:]))
        return _full(shape)


def _check_rows(task: Any, shape: tuple[int, ...]) -> None:
    """A GEMM tile's ``m_off``/``M_tile``, when either is given, name rows of the output viewed
    as ``[rows, shape[-1]]`` (defaults 0 and every row). The semantics write every row whatever
    they say, so this is a bound on the claim, not on the write (spec §7, M401)."""
    if not isinstance(task.params, dict) or ("m_off" not in task.params and "M_tile" not in task.params):
        return
    rows = _numel(shape[:-1])
    start, count = _param(task, "m_off", 0), _param(task, "M_tile", rows)
    if start < 0 or count <= 0 or start + count > rows:
        raise CertificateRefused(
            f"task {task.id} claims rows [{start}, {start + count}) of an output with {rows} rows"
        )


def _fused_writes(task: Any, shape: tuple[int, ...]) -> list[Box] | None:
    """The boxes of a FUSED task's output written by the recipe's ``final`` steps (spec §7.8),
    or None where the checker cannot bound them: a recipe that is not a list of step objects,
    no final step, or a final step it does not bound. Every primitive but the column tiles and
    KV_APPEND writes its whole output; a tile writes columns ``[n_off, n_off + N_tile)`` of every
    row when those are ints inside the output; KV_APPEND and nested FUSED are not bounded here."""
    recipe = task.params.get("recipe") if isinstance(task.params, dict) else None
    steps = recipe.get("steps") if isinstance(recipe, dict) else None
    if not isinstance(steps, list) or not all(isinstance(st, dict) for st in steps):
        return None
    finals = [st for st in steps if _is_final(st.get("out", "final"))]
    boxes = [_step_write(st, shape) for st in finals]
    if not boxes or any(box is None for box in boxes):
        return None
    return [box for box in boxes if box is not None]


def _is_final(out: Any) -> bool:
    """A step writes the task's output: ``out`` is ``"final"`` or -1 (spec §7.8)."""
    return (isinstance(out, str) and out == "final") or (_int(out) and out == -1)


def _step_write(step: dict[str, Any], shape: tuple[int, ...]) -> Box | None:
    """The box one recipe step writes of the task's output, or None where it is not bounded."""
    try:
        op = opcode_of(step.get("op"))
    except ValueError:
        return None
    params = step.get("params", {})
    if op in (InstructionKind.FUSED, InstructionKind.KV_APPEND) or not isinstance(params, dict):
        return None
    if op not in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE):
        return _full(shape)
    off, width = params.get("n_off", 0), params.get("N_tile")  # N_tile is required (M453)
    if not shape or not _int(off) or not _int(width) or width <= 0:
        return None
    box = (*_full(shape[:-1]), (off, off + width))
    return box if _inside(box, shape) else None


def _recipe_inputs(task: Any, slot: int) -> set[int]:
    """The operand slots a FUSED recipe's steps name as ``{"in": k}`` (every slot, ``slot``
    included, when the recipe is not a list of steps with lists of args)."""
    recipe = task.params.get("recipe") if isinstance(task.params, dict) else None
    steps = recipe.get("steps") if isinstance(recipe, dict) else None
    if not isinstance(steps, list) or not all(isinstance(st, dict) for st in steps):
        return {slot}
    named: set[int] = set()
    for step in steps:
        args = step.get("args", [])
        if not isinstance(args, list):
            return {slot}
        named.update(a["in"] for a in args if isinstance(a, dict) and _int(a.get("in")))
    return named


def _covers(boxes: list[Box], target: Box) -> bool:
    """Whether the union of ``boxes`` contains every element of ``target`` (slab decomposition)."""
    if _empty(target):
        return True
    if not target:
        return bool(boxes)
    clipped = [
        tuple((max(lo, t0), min(hi, t1)) for (lo, hi), (t0, t1) in zip(b, target, strict=True)) for b in boxes
    ]
    live = [b for b in clipped if not _empty(b)]
    if len(target) == 1:
        at = target[0][0]
        for lo, hi in sorted(b[0] for b in live):
            if lo > at:
                return False
            at = max(at, hi)
        return at >= target[0][1]
    cuts = sorted({target[0][0], target[0][1], *(x for b in live for x in b[0])})
    for lo, hi in itertools.pairwise(cuts):
        spanning = [b[1:] for b in live if b[0][0] <= lo and hi <= b[0][1]]
        if not _covers(spanning, target[1:]):
            return False
    return True


# -- the program, as the checker sees it ----------------------------------------------------------


class _Program:
    """Well-formedness the obligations rely on; refuses the program at the first problem."""

    def __init__(self, prog: MegakernelProgram) -> None:
        self.prog = prog
        self.kinds: dict[int, BufferKind] = {}
        self.spaces: dict[int, MemSpace] = {}
        shapes: dict[int, tuple[int, ...]] = {}
        cap, what = _memory_cap(prog)
        for b in self._records(prog.buffers, "buffer"):
            if not isinstance(b.kind, BufferKind) or not isinstance(b.space, MemSpace):
                raise CertificateRefused(f"buffer {b.id}: kind or space is not an enum member")
            shape = tuple(b.shape) if isinstance(b.shape, tuple | list) else None
            if shape is None or len(shape) > ABI_MAX_RANK or not all(_int(d) and d >= 0 for d in shape):
                raise CertificateRefused(
                    f"buffer {b.id}: shape is not at most {ABI_MAX_RANK} non-negative ints"
                )
            if not isinstance(b.dtype, DType) or b.dtype.nbytes(_numel(shape)) > cap:
                raise CertificateRefused(f"buffer {b.id}: larger than {what} ({cap} bytes) (spec §5.2)")
            self.kinds[b.id], self.spaces[b.id], shapes[b.id] = b.kind, b.space, shape
        self.regions = _Regions(shapes)
        counters = self._records(prog.counters, "counter")
        for c in counters:
            if c.init != 0 or not _int(c.init):
                raise CertificateRefused(f"counter {c.id} starts at {c.init!r}, not 0 (spec §1.5, §2.3)")
        self.counter_ids = {c.id for c in counters}
        self.tasks = self._records(prog.tasks, "task")
        self.at = {t.id: n for n, t in enumerate(self.tasks)}
        self.producers: dict[int, int] = {}
        for t in self.tasks:
            self._check_task(t)
            self.producers[t.out_counter] = self.producers.get(t.out_counter, 0) + 1
        self.outputs_named = {b for t in self.tasks for b in t.outputs}
        for t in self.tasks:
            for w in t.waits:
                made = self.producers.get(w.counter, 0)
                if made > 1 and w.threshold != made:
                    raise CertificateRefused(
                        f"task {t.id} waits for {w.threshold} of the {made} producers of counter "
                        f"{w.counter}: a shared counter needs the full join (spec §3.3)"
                    )

    @staticmethod
    def _records(records: Any, what: str) -> list[Any]:
        """Records whose ids are their list positions (spec §1: ids index the ABI tables)."""
        if not isinstance(records, list):
            raise CertificateRefused(f"the program's {what}s are not a list")
        for n, r in enumerate(records):
            rid = getattr(r, "id", None)
            if not _int(rid) or rid != n:
                raise CertificateRefused(f"{what} at position {n} has id {rid!r}, not {n}")
        return records

    def _check_task(self, t: Any) -> None:
        spec = OP_REGISTRY.get(t.op) if isinstance(t.op, InstructionKind) else None
        lists = {"inputs": t.inputs, "outputs": t.outputs, "waits": t.waits}
        if spec is None or not all(isinstance(v, list) for v in lists.values()):
            raise CertificateRefused(f"task {t.id}: unknown opcode or malformed lists")
        for name, cap in _CAPS.items():
            if len(lists[name]) > cap:
                raise CertificateRefused(f"task {t.id}: more than {cap} {name}")
        if not all(_int(b) and b in self.kinds for b in (*t.inputs, *t.outputs)):
            raise CertificateRefused(f"task {t.id} names a buffer that does not exist")
        arity_ok = len(t.inputs) >= spec.min_inputs and (
            spec.max_inputs < 0 or len(t.inputs) <= spec.max_inputs
        )
        if not arity_ok or len(t.outputs) != spec.n_outputs:
            raise CertificateRefused(f"task {t.id}: operand count outside the arity of {t.op.name}")
        if not isinstance(t.params, dict) or any(p not in t.params for p in spec.required_params):
            raise CertificateRefused(f"task {t.id}: a required param of {t.op.name} is missing")
        for key, value in t.params.items():
            if not _fits(PARAM_FIELDS.get(key), value):
                raise CertificateRefused(f"task {t.id}: param {key} = {value!r} does not fit its ABI type")
        if not _int(t.out_counter) or t.out_counter not in self.counter_ids:
            raise CertificateRefused(f"task {t.id}: out_counter names no counter")
        for w in t.waits:
            if not _int(getattr(w, "counter", None)) or w.counter not in self.counter_ids:
                raise CertificateRefused(f"task {t.id}: a wait names no counter")
            if not _int(w.threshold) or w.threshold < 1:
                raise CertificateRefused(f"task {t.id}: a wait threshold is not a positive int")
        if t.sm is not None:
            limit = self.prog.target.num_sms if self.prog.target is not None else None
            if not _int(t.sm) or t.sm < 0 or (limit is not None and t.sm >= limit):
                raise CertificateRefused(f"task {t.id}: sm {t.sm!r} is not an SM of the target")
        for bid in t.outputs:
            if self.kinds[bid] in _READ_ONLY:
                raise CertificateRefused(
                    f"task {t.id} writes buffer {bid} of read-only kind {self.kinds[bid].name}"
                )

    def hop(self, a: int, b: int) -> bool:
        """``a`` ends before ``b`` starts and releases its writes to it: ``b`` waits for all
        producers of ``a``'s counter (spec §2.1)."""
        ta, tb = self.tasks[self.at[a]], self.tasks[self.at[b]]
        need = self.producers[ta.out_counter]
        return a != b and any(w.counter == ta.out_counter and w.threshold >= need for w in tb.waits)


def _fits(kind: str | None, value: Any) -> bool:
    """A param value marshals into its ABI slot: int32 for ``i``, finite float32 for ``f`` (spec §7)."""
    if kind == "i":
        return _int(value) and INT32_MIN <= value <= INT32_MAX
    if kind == "f":
        return type(value) in (int, float) and math.isfinite(value) and abs(value) <= FLOAT32_MAX
    return True  # a key the ABI does not carry is not marshalled at all


def _memory_cap(prog: MegakernelProgram) -> tuple[int, str]:
    """The most bytes one buffer may take: the target's memory, else the stated cap (spec §5.2)."""
    hbm = getattr(prog.target, "hbm_bytes", None)
    if isinstance(hbm, int) and _int(hbm) and hbm > 0:
        return hbm, "the target's hbm_bytes"
    return MAX_BUFFER_BYTES_NO_TARGET.default, "max_buffer_bytes_no_target"


def _check_launch(prog: MegakernelProgram) -> None:
    """The schedule can launch on its target: whole warps per block, shared memory within the
    opt-in limit (spec §3.5, §5.1)."""
    config = prog.config
    if config is None:
        return
    tpb, smem = config.threads_per_block, config.smem_bytes_per_block
    if not _int(tpb) or not WARP <= tpb <= MAX_THREADS_PER_BLOCK or tpb % WARP:
        raise CertificateRefused(
            f"threads_per_block {tpb!r} is not a multiple of {WARP} up to {MAX_THREADS_PER_BLOCK}"
        )
    cap = prog.target.smem_bytes_per_block_optin if prog.target is not None else None
    if not _int(smem) or smem < 0 or (cap is not None and smem > cap):
        raise CertificateRefused(f"smem_bytes_per_block {smem!r} is outside [0, the target's opt-in limit]")


# -- the certificate's shape (untrusted input) ---------------------------------------------------


def _ints(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(_int(v) for v in value):
        raise MalformedCertificate(f"{where} is not a list of ints")
    return value


def _shape(cert: Any) -> tuple[list[int], list[list[int]], list[tuple[int, list[int]]]]:
    if not isinstance(cert, dict):
        raise MalformedCertificate("a certificate is a JSON object")
    missing = [k for k in ("format", "version", "program_sha256", "order", "paths", "pages") if k not in cert]
    if missing:
        raise MalformedCertificate(f"the certificate has no {', '.join(missing)}")
    if cert["format"] != FORMAT or not _int(cert["version"]) or cert["version"] != VERSION:
        raise MalformedCertificate(f"not an {FORMAT} of version {VERSION}")
    if not isinstance(cert["program_sha256"], str):
        raise MalformedCertificate("program_sha256 is not a string")
    order = _ints(cert["order"], "order")
    if not isinstance(cert["paths"], list):
        raise MalformedCertificate("paths is not a list")
    paths = [_ints(p, f"paths[{n}]") for n, p in enumerate(cert["paths"])]
    if not isinstance(cert["pages"], list):
        raise MalformedCertificate("pages is not a list")
    pages: list[tuple[int, list[int]]] = []
    for n, entry in enumerate(cert["pages"]):
        if not isinstance(entry, dict) or not _int(entry.get("page")):
            raise MalformedCertificate(f"pages[{n}] has no int page")
        pages.append((entry["page"], _ints(entry.get("occupants"), f"pages[{n}].occupants")))
    return order, paths, pages


# -- the checks ----------------------------------------------------------------------------------


def check_certificate(prog: MegakernelProgram, cert: Any) -> None:
    """Accept ``cert`` as a proof that ``prog`` is safe, or raise :class:`CertificateRefused`.

    Spec §3. The cyclic garbage collector is paused meanwhile (bulk allocation of acyclic data).
    """
    with gc_paused():
        try:
            _check(prog, cert)
        except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            # a record of the program of an unexpected type: refuse, never a traceback
            raise CertificateRefused(f"the program cannot be checked: {type(exc).__name__}: {exc}") from exc


def _check(prog: MegakernelProgram, cert: Any) -> None:
    order, paths, pages = _shape(cert)
    if cert["program_sha256"] != hashlib.sha256(dumps(prog).encode()).hexdigest():
        raise CertificateRefused("the certificate was made for a different program")
    p = _Program(prog)
    _check_launch(prog)
    _check_order(p, order)
    proven = _check_paths(p, paths)
    uses = _check_regions(p)
    for a, b, either, why in (*_obligations(p, uses), *_writer_chains(p, uses[1], order)):
        if (a, b) not in proven and not (either and (b, a) in proven):
            raise CertificateRefused(f"{why}: no happens-before path from task {a} to task {b}")
    _check_on_chip(p)
    _check_pages(p, pages, proven, uses)


def _check_order(p: _Program, order: list[int]) -> None:
    if len(order) != len(p.tasks) or set(order) != set(p.at):
        raise CertificateRefused("order is not a permutation of the task ids")
    value = dict.fromkeys(p.counter_ids, 0)
    done: set[int] = set()
    last: dict[int, int] = {}
    previous: dict[int, int] = {}
    for t in p.tasks:
        if t.sm is not None:
            if t.sm in last:
                previous[t.id] = last[t.sm]
            last[t.sm] = t.id
    for tid in order:
        t = p.tasks[p.at[tid]]
        if tid in previous and previous[tid] not in done:
            raise CertificateRefused(
                f"order starts task {tid} before its SM queue predecessor {previous[tid]}"
            )
        short = next((w for w in t.waits if value[w.counter] < w.threshold), None)
        if short is not None:
            raise CertificateRefused(
                f"order starts task {tid} while counter {short.counter} < {short.threshold}"
            )
        done.add(tid)
        value[t.out_counter] += 1


def _check_paths(p: _Program, paths: list[list[int]]) -> set[tuple[int, int]]:
    proven: set[tuple[int, int]] = set()
    for path in paths:
        if len(path) < 2 or not all(tid in p.at for tid in path):
            raise CertificateRefused(f"path {path[:8]!r} is not a list of at least two task ids")
        for a, b in itertools.pairwise(path):
            if not p.hop(a, b):
                raise CertificateRefused(
                    f"path {path[0]} .. {path[-1]}: {a} -> {b} is not a happens-before edge"
                )
        proven.add((path[0], path[-1]))
    return proven


# The readers and the writers of each buffer: buffer id -> [(task id, region)], twice.
Uses = tuple[dict[int, list[tuple[int, Box]]], dict[int, list[tuple[int, Box]]]]


def _check_regions(p: _Program) -> Uses:
    """Every task's regions (refusing any outside its buffer), and coverage of every read of an
    ACTIVATION or IO_OUTPUT by the other writers' bounded writes (spec §3.3: no read of
    unwritten data). An unbounded FUSED write counts as the whole buffer in the returned uses."""
    reads: dict[int, list[tuple[int, Box]]] = {}
    writes: dict[int, list[tuple[int, Box]]] = {}
    covering: dict[int, list[tuple[int, Box]]] = {}
    for t in p.tasks:
        for bid, box in p.regions.reads(t):
            reads.setdefault(bid, []).append((t.id, box))
        for bid, box, bounded in p.regions.writes(t):
            writes.setdefault(bid, []).append((t.id, box))
            if bounded:
                covering.setdefault(bid, []).append((t.id, box))
    for bid, kind in p.kinds.items():
        if kind not in (BufferKind.ACTIVATION, BufferKind.IO_OUTPUT):
            continue
        users: list[tuple[int | None, Box]] = list(reads.get(bid, []))
        if kind is BufferKind.IO_OUTPUT:
            if bid not in p.outputs_named:
                raise CertificateRefused(f"IO_OUTPUT buffer {bid} is produced by no task (spec §3.5)")
            users.append((None, _full(p.regions.shapes[bid])))  # the host reads it after the launch
        ws = covering.get(bid, [])
        for reader, box in users:
            if not _covers([wb for w, wb in ws if w != reader and _meet(wb, box)], box):
                who = "the host" if reader is None else f"task {reader}"
                raise CertificateRefused(f"{who} reads elements of buffer {bid} that no other task writes")
    return reads, writes


def _obligations(p: _Program, uses: Uses) -> Iterator[tuple[int, int, bool, str]]:
    """(a, b, either, why): ``a`` must happen before ``b`` (or either way round) (spec §2.2, §3.3)."""
    reads, writes = uses
    for bid, kind in p.kinds.items():
        if kind not in _TRANSIENT:
            continue
        ws = writes.get(bid, [])
        for reader, box in reads.get(bid, []):
            for w, wb in ws:
                if w != reader and _meet(wb, box):
                    yield (w, reader, False, f"task {reader} reads buffer {bid} written by task {w}")
        for a, b in _writer_pairs(ws):
            yield (a, b, True, f"tasks {a} and {b} write overlapping elements of buffer {bid}")


def _writer_chains(
    p: _Program, writes: dict[int, list[tuple[int, Box]]], order: list[int]
) -> Iterator[tuple[int, int, bool, str]]:
    """Writers of one buffer that signal different counters are totally ordered (a counter
    cannot tell them apart otherwise): each, in ``order``, before the next (spec §3.3)."""
    rank = {tid: n for n, tid in enumerate(order)}
    for bid, ws in writes.items():
        tids = sorted({w for w, _ in ws}, key=rank.__getitem__)
        if len({p.tasks[p.at[w]].out_counter for w in tids}) > 1:
            for a, b in itertools.pairwise(tids):
                yield (a, b, False, f"tasks {a} and {b} write buffer {bid} and signal different counters")


def _writer_pairs(ws: list[tuple[int, Box]]) -> Iterator[tuple[int, int]]:
    """Pairs of writers with overlapping regions, by a sweep over the last dimension."""
    ranked = sorted(ws, key=lambda w: w[1][-1][0] if w[1] else 0)
    active: list[tuple[int, Box]] = []
    for tid, box in ranked:
        start = box[-1][0] if box else 0
        active = [(a, ab) for a, ab in active if not ab or ab[-1][1] > start]
        for other, obox in active:
            if other != tid and _meet(obox, box):
                yield other, tid
        active.append((tid, box))


def _check_on_chip(p: _Program) -> None:
    """SMEM/REGISTER buffers are private to one SM: all users assigned to one SM, or none (spec §1.6)."""
    sms: dict[int, set[int | None]] = {}
    for t in p.tasks:
        for bid in (*t.inputs, *t.outputs):
            if p.spaces[bid] in _ON_CHIP:
                sms.setdefault(bid, set()).add(t.sm)
    for bid, where in sms.items():
        if len(where) > 1:
            raise CertificateRefused(
                f"on-chip buffer {bid} is used on more than one SM ({sorted(map(str, where))})"
            )


def _check_pages(
    p: _Program, pages: list[tuple[int, list[int]]], proven: set[tuple[int, int]], uses: Uses
) -> None:
    """Occupants of a page in the declared order: every use of one before every write of the next."""
    alloc = p.prog.pages
    table: dict[int, int] = {}
    sizes: dict[int, int] = {}
    if alloc is not None:
        if not isinstance(alloc.buffer_to_page, dict) or not isinstance(alloc.pages, list):
            raise CertificateRefused("the page allocation is malformed")
        for page in alloc.pages:
            if not _int(getattr(page, "id", None)) or not _int(page.nbytes) or page.id in sizes:
                raise CertificateRefused("page ids are not unique ints, or a size is not an int")
            sizes[page.id] = page.nbytes
        table = dict(alloc.buffer_to_page)
    reads, writes = uses
    occupants: dict[int, set[int]] = {}
    for bid, pid in table.items():
        if not _int(bid) or bid not in p.kinds or pid not in sizes:
            raise CertificateRefused(f"the page table binds {bid!r} to {pid!r}: no such buffer or page")
        if p.kinds[bid] is not BufferKind.ACTIVATION:
            raise CertificateRefused(f"buffer {bid} is bound to a page but is not an ACTIVATION")
        buf = p.prog.buffers[bid]  # ids are list positions
        if buf.dtype.nbytes(_numel(p.regions.shapes[bid])) > sizes[pid]:
            raise CertificateRefused(f"buffer {bid} does not fit page {pid}")
        if bid in reads or bid in writes:
            occupants.setdefault(pid, set()).add(bid)
    declared = dict(pages)
    if len(declared) != len(pages):
        raise CertificateRefused("a page is listed twice")
    for pid, live in occupants.items():
        seq = declared.get(pid, [])
        if len(seq) != len(live) or set(seq) != live:
            raise CertificateRefused(f"page {pid}: the occupants in use are {sorted(live)}, not {seq}")
        for x, y in itertools.pairwise(seq):
            if not writes.get(y):
                raise CertificateRefused(f"page {pid}: buffer {y} follows buffer {x} but nothing writes it")
            for u, _ in (*reads.get(x, []), *writes.get(x, [])):
                for w, _ in writes[y]:
                    if u == w:
                        raise CertificateRefused(f"page {pid}: task {u} uses buffers {x} and {y} at once")
                    if (u, w) not in proven:
                        raise CertificateRefused(
                            f"page {pid}: task {u} uses buffer {x} but no path orders it before task {w}, "
                            f"which writes buffer {y} (a clobber)"
                        )
