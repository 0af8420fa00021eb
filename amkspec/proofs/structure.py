"""Structure obligations (codes S1xx): the program is well formed before anything is proved.

Referential integrity, ids, ABI caps, opcode arity, required params and param
types (spec §3.1, §1.3–§1.5, §7), SM assignment range (§3.1, §5.2) and
the page table (§1.6). Each check is a generator of findings; a task with a
structure error is recorded in ``ProgramIndex.rejected_tasks`` so that later
families (memory safety) do not judge meaningless shapes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import chain, compress, count
from operator import itemgetter, ne
from types import NoneType
from typing import Any, NamedTuple

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    OP_REGISTRY,
    PARAM_FIELDS,
    Buffer,
    BufferKind,
    Counter,
    DType,
    InstructionKind,
    MemSpace,
    OpSpec,
    Page,
    PageAllocation,
    Task,
    Wait,
)
from amkspec.ir.columns import TaskColumns, every_exactly
from amkspec.ir.limits import FLOAT32_MAX, MAX_BUFFER_BYTES_NO_TARGET
from amkspec.ir.opcodes import INT32_MAX, INT32_MIN, VARIADIC
from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex, as_list, is_int

_S, _E, _W = Family.STRUCTURE, Severity.ERROR, Severity.WARNING
DUPLICATE_ID = register("S101", _S, _E, "two buffers, counters, tasks or pages share an id")
ID_NOT_POSITION = register(
    "S102", _S, _E, "a buffer, counter or task id is not an int equal to its list position"
)
COUNTER_INIT = register("S103", _S, _E, "a counter's init is not 0")
UNKNOWN_BUFFER = register("S104", _S, _E, "a task input or output names no buffer")
UNKNOWN_COUNTER = register("S105", _S, _E, "an out_counter or a wait names no counter")
ABI_CAP = register(
    "S106", _S, _E,
    f"more than {ABI_MAX_INPUTS} inputs, {ABI_MAX_OUTPUTS} outputs or {ABI_MAX_WAITS} waits",
)
BAD_BUFFER = register(
    "S107",
    _S,
    _E,
    f"a buffer's rank exceeds {ABI_MAX_RANK}, a dim is not a non-negative int, or an enum field is invalid",
)
BAD_THRESHOLD = register("S108", _S, _E, "a wait threshold is not a positive int")
ARITY = register("S109", _S, _E, "input or output count outside the opcode's OP_REGISTRY arity")
MISSING_PARAM = register("S110", _S, _E, "a required param of the opcode is missing")
PARAM_TYPE = register(
    "S111", _S, _E, "a param value does not fit its PARAM_FIELDS type (int32 / finite float32)"
)
UNKNOWN_PARAM = register("S112", _S, _W, "a param key is not in PARAM_FIELDS (it will not marshal)")
BAD_SM = register("S113", _S, _E, "a task's sm is not an int in [0, target.num_sms)")
BAD_PAGE_TABLE = register(
    "S114", _S, _E, "the page table names a missing buffer or page, or a page record is malformed"
)
PAGE_TOO_SMALL = register("S115", _S, _E, "a page is smaller than a buffer bound to it")
PAGED_NON_ACTIVATION = register("S116", _S, _E, "a buffer that is not an ACTIVATION is bound to a page")
BUFFER_TOO_LARGE = register(
    "S117", _S, _E,
    "a buffer is larger than the target's hbm_bytes (without a target: max_buffer_bytes_no_target)",
)


def check_structure(ix: ProgramIndex) -> list[Diagnostic]:
    """All structure findings, in the order: ids, counters, buffers, tasks, SMs, pages (spec §1, §3.1)."""
    scan = scan_tasks(ix)
    ix.tasks_well_formed = not scan.unclean
    found: list[Diagnostic] = []
    found.extend(check_ids(ix, tasks_in_place=scan.ids_in_place))
    found.extend(check_counter_init(ix))
    found.extend(check_buffers(ix))
    for pos in scan.unclean:
        task_found = list(check_task(ix, pos))
        if any(d.severity is Severity.ERROR for d in task_found):
            ix.rejected_tasks.add(pos)
        found.extend(task_found)
    if not scan.sms_in_range:
        found.extend(check_sm(ix))
    found.extend(check_pages(ix))
    return found


# -- ids -------------------------------------------------------------------------------------


def check_ids(ix: ProgramIndex, *, tasks_in_place: bool = False) -> Iterator[Diagnostic]:
    """Ids are ints, unique, and equal to list positions: the ABI tables are indexed by id (spec §8).
    ``tasks_in_place``: the caller knows every task's id is its position (:func:`scan_tasks`); the
    index knows it of the buffers and counters."""
    prog = ix.prog
    for what, records, key, in_place in (
        ("buffer", as_list(prog.buffers), "buffers", ix.buffers_in_place),
        ("counter", as_list(prog.counters), "counters", ix.counters_in_place),
        ("task", ix.tasks, "tasks", tasks_in_place or _in_place(ix.tasks)),
    ):
        if in_place:
            continue
        first: dict[int, int] = {}
        for pos, rec in enumerate(records):
            rid = getattr(rec, "id", None)
            if type(rid) is int and rid == pos and rid not in first:
                first[rid] = pos
                continue
            if not is_int(rid):
                yield diag(ID_NOT_POSITION, f"{what} at position {pos} has id {rid!r}, not an int")
            elif rid in first:
                yield diag(
                    DUPLICATE_ID,
                    f"{what}s at positions {first[rid]} and {pos} share id {rid}",
                    **{key: [rid]},
                )
            else:
                first[rid] = pos
                yield diag(
                    ID_NOT_POSITION,
                    f"{what} {rid} is at list position {pos}; ids must equal positions",
                    **{key: [rid]},
                )


def _in_place(records: list[Any]) -> bool:
    """The common case: every record's id is the int equal to its position (0, 1, 2, ...)."""
    try:
        ids = [rec.id for rec in records]
    except AttributeError:
        return False
    return ids == [*range(len(ids))] and every_exactly(ids, int)  # the type test rules out True



def check_counter_init(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Counters start at 0 for every launch (spec §1.5, §2)."""
    counters = as_list(ix.prog.counters)
    if every_exactly(counters, Counter) and _all_zero([c.init for c in counters]):
        return
    for c in counters:
        init = getattr(c, "init", None)
        if not (is_int(init) and init == 0):
            cid = getattr(c, "id", None)
            yield diag(
                COUNTER_INIT,
                f"counter {cid} has init {init!r}; counters are zeroed before each launch (init must be 0)",
                counters=[cid],
            )


def _all_zero(values: list[Any]) -> bool:
    """Every value is the int 0 (no ``False``, no ``0.0``)."""
    return every_exactly(values, int) and not any(values)


# -- buffers ---------------------------------------------------------------------------------


def buffer_problem(buf: Any) -> str | None:
    """Why a buffer record is malformed (spec §1.3), or None."""
    if _buffer_ok(buf):
        return None
    for field, enum_type in (("kind", BufferKind), ("dtype", DType), ("space", MemSpace)):
        if not isinstance(getattr(buf, field, None), enum_type):
            return f"{field} {getattr(buf, field, None)!r} is not a {enum_type.__name__}"
    shape = getattr(buf, "shape", None)
    if not isinstance(shape, (tuple, list)):
        return f"shape {shape!r} is not a list"
    if len(shape) > ABI_MAX_RANK:
        return f"rank {len(shape)} exceeds ABI_MAX_RANK ({ABI_MAX_RANK})"
    bad = [d for d in shape if not (is_int(d) and 0 <= d <= INT32_MAX)]
    if bad:
        return f"shape {list(shape)!r} has dim {bad[0]!r}, not a non-negative int32"
    return None


def _buffer_ok(buf: Any) -> bool:
    """Fast path of :func:`buffer_problem`: True only for a well-formed buffer (most of them)."""
    if type(buf) is not Buffer:
        return False
    if type(buf.kind) is not BufferKind or type(buf.dtype) is not DType or type(buf.space) is not MemSpace:
        return False
    shape = buf.shape
    if type(shape) is not tuple or len(shape) > ABI_MAX_RANK:
        return False
    for d in shape:  # noqa: SIM110 - a plain loop is 2-3x faster than all() over a generator
        if type(d) is not int or not 0 <= d <= INT32_MAX:
            return False
    return True


def check_buffers(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Every buffer record is well formed (:func:`buffer_problem`, spec §1.3) and fits the
    target's memory (:func:`buffer_cap`, spec §5.2)."""
    cap, where = buffer_cap(ix.prog)
    buffers = as_list(ix.prog.buffers)
    if _all_fine(buffers, cap):
        ix.buffers_well_formed = True
        return
    for buf in buffers:
        if _buffer_ok(buf) and _nbytes(buf) <= cap:
            continue
        problem = buffer_problem(buf)
        bid = getattr(buf, "id", None)
        if problem is not None:
            yield diag(BAD_BUFFER, f"buffer {bid}:{getattr(buf, 'name', '')} {problem}", buffers=[bid])
            continue
        nbytes = _nbytes(buf)
        if nbytes > cap:
            yield diag(
                BUFFER_TOO_LARGE,
                f"buffer {bid}:{getattr(buf, 'name', '')} needs {nbytes} bytes, more than {where} ({cap})",
                buffers=[bid],
            )


def _all_fine(buffers: list[Any], cap: int) -> bool:
    """Fast path of :func:`check_buffers`: True only if every buffer passes :func:`_buffer_ok` and,
    by the bytes of all of them together, fits in ``cap`` (a loop: as fast as a dozen whole-column
    passes on 8k buffers, faster on a lowered program's few dozen)."""
    ok = _buffer_ok
    for buf in buffers:
        if not ok(buf):
            return False
    return sum(map(math.prod, [b.shape for b in buffers])) * _MAX_ELEMENT_BYTES <= cap


_MAX_ELEMENT_BYTES = max(dtype.nbytes(1) for dtype in DType)
"""Bytes of one element of the widest dtype: ``dtype.nbytes(n) <= n * _MAX_ELEMENT_BYTES``."""


def buffer_cap(prog: Any) -> tuple[int, str]:
    """The most bytes one buffer may take, and what sets it: the target's ``hbm_bytes`` (spec §5.2),
    else the stated cap ``max_buffer_bytes_no_target`` of :mod:`amkspec.ir.limits`."""
    hbm = getattr(getattr(prog, "target", None), "hbm_bytes", None)
    if is_int(hbm) and hbm > 0:
        return hbm, "the target's hbm_bytes"
    return MAX_BUFFER_BYTES_NO_TARGET.default, "max_buffer_bytes_no_target"


def buffer_nbytes(buf: Any) -> int | None:
    """Storage bytes of a well-formed buffer, None for a malformed one."""
    if buffer_problem(buf) is not None:
        return None
    return _nbytes(buf)


def total_nbytes(buffers: list[Any], *, well_formed: bool = False) -> int:
    """The sum of :func:`buffer_nbytes` over ``buffers`` (0 for a malformed one). When the caller
    knows every buffer is well formed (:func:`buffer_problem` is None), each distinct
    ``(dtype, shape)`` is sized once (from :data:`SIZE_EACH_BELOW` buffers on)."""
    if not well_formed:
        return sum(buffer_nbytes(b) or 0 for b in buffers)
    if len(buffers) < SIZE_EACH_BELOW:  # nbytes_of of each, inline
        return sum([b.dtype.nbytes(math.prod(b.shape)) for b in buffers])
    dtypes, shapes = [b.dtype for b in buffers], [b.shape for b in buffers]
    size = {key: nbytes_of(*key) for key in dict.fromkeys(zip(dtypes, shapes, strict=True))}
    return sum(map(size.__getitem__, zip(dtypes, shapes, strict=True)))  # no list of a tuple per buffer


SIZE_EACH_BELOW = 64
"""Fewer well-formed buffers than this are sized one by one: the distinct ``(dtype, shape)`` cost
more to find than they save (toy's 12 weights: 2.4 against 5.1 µs; 1261 on layered 8k: 223
against 184 µs)."""


def _nbytes(buf: Any) -> int:
    return nbytes_of(buf.dtype, buf.shape)


def nbytes_of(dtype: DType, shape: tuple[int, ...]) -> int:
    """Storage bytes of a well-formed ``(dtype, shape)`` (spec §1.3)."""
    return int(dtype.nbytes(math.prod(shape)))


# -- tasks -----------------------------------------------------------------------------------


def _arity(spec: OpSpec) -> tuple[range, range, frozenset[str]]:
    """``(inputs, outputs, required)`` of an opcode: the input and output counts its OP_REGISTRY
    arity allows within the ABI caps (empty when the registry asks for more than the ABI allows)
    and its required params."""
    hi_in = ABI_MAX_INPUTS if spec.max_inputs == VARIADIC else min(spec.max_inputs, ABI_MAX_INPUTS)
    n_out = spec.n_outputs
    lo_out, hi_out = (0, ABI_MAX_OUTPUTS) if n_out == VARIADIC else (n_out, n_out)
    outputs = range(lo_out, min(hi_out, ABI_MAX_OUTPUTS) + 1)
    return range(spec.min_inputs, hi_in + 1), outputs, frozenset(spec.required_params)


_ARITY = {op: _arity(spec) for op, spec in OP_REGISTRY.items()}


class TaskScan(NamedTuple):
    """What one pass over the tasks found (:func:`scan_tasks`)."""

    unclean: list[int]
    """Ascending positions of the tasks :func:`check_task` may find something on; on every other
    task it finds nothing, and that task is exactly a :class:`~amkspec.ir.Task` whose opcode is an
    :class:`~amkspec.ir.InstructionKind` with an arity OP_REGISTRY allows, whose inputs and
    outputs are lists of int ids of known buffers and whose params are a dict
    (:attr:`~amkspec.proofs.index.ProgramIndex.tasks_well_formed` when none is unclean)."""
    ids_in_place: bool
    """Every task's id is the int equal to its position (:func:`check_ids` finds nothing on tasks)."""
    sms_in_range: bool
    """Every task's sm is None or an int in range (:func:`check_sm` finds nothing)."""


def scan_tasks(ix: ProgramIndex) -> TaskScan:
    """Fast path of the per-task checks: which tasks the detailed checks need to look at (most
    tasks of a real program are clean). A program whose every task is clean is recognised a
    column at a time (:func:`_scan_columns`, from :data:`COLUMNS_MIN_TASKS` tasks on); any other
    goes through :func:`_scan_each`."""
    scan = _scan_columns(ix) if ix.n >= COLUMNS_MIN_TASKS else None
    return _scan_each(ix) if scan is None else scan


COLUMNS_MIN_TASKS = 128
"""Smaller programs are scanned task by task: the dozen whole-column passes cost more than the
per-task tests they replace."""


def _scan_each(ix: ProgramIndex) -> TaskScan:
    """:func:`scan_tasks`, one task at a time.

    It reads the index's per-task tables instead of re-resolving references: ``inputs`` and
    ``outputs`` keep the known buffer ids (distinct), ``out_counter`` an int id, ``waits`` the Wait
    records with an int counter."""
    unclean: list[int] = []
    ids_in_place = sms_in_range = True
    counters, arities, top = ix.counters, _ARITY, _sm_range(ix)[1]
    # program-wide facts that settle every task's out_counter and waits at once (else each is tested)
    refs_known = ix.plain_inputs and ix.plain_outputs  # lists of known buffer ids
    ocs_known = ix.plain_out_counters and counters.keys() >= ix.producers.keys()
    waits_known = ix.plain_waits and _waits_fine(ix)
    waits_short = (longest := ix.longest_waits) is not None and longest <= ABI_MAX_WAITS
    columns = zip(ix.tasks, ix.inputs, ix.outputs, ix.out_counter, ix.waits, strict=True)
    for pos, (task, known_in, known_out, oc, table) in enumerate(columns):
        if type(task) is not Task:
            unclean.append(pos)
            ids_in_place = sms_in_range = False
            continue
        tid, sm = task.id, task.sm
        if tid != pos or type(tid) is not int:
            ids_in_place = False
        if sm is not None and (type(sm) is not int or not 0 <= sm <= top):
            sms_in_range = False
        op, ins, outs, waits, params = task.op, task.inputs, task.outputs, task.waits, task.params
        if (
            type(op) is not InstructionKind
            or type(ins) is not list
            or type(outs) is not list
            or type(waits) is not list
            or type(params) is not dict
            or (arity := arities.get(op)) is None
        ):
            unclean.append(pos)
            continue
        inputs, outputs, required = arity
        n_in, n_out = len(ins), len(outs)
        if (
            n_in not in inputs
            or n_out not in outputs
            or (not waits_short and len(waits) > ABI_MAX_WAITS)
            or (not ocs_known and oc not in counters)
            or (not waits_known and len(table) != len(waits))
            or not params.keys() >= required
            or (
                not refs_known
                and (len(known_in) != n_in or len(known_out) != n_out)
                and not _all_buffers(ix, ins + outs)
            )
        ):
            unclean.append(pos)
            continue
        if not (waits_known or _table_fine(table, counters)) or not _params_clean(params):
            unclean.append(pos)
    return TaskScan(unclean, ids_in_place, sms_in_range)


def _scan_columns(ix: ProgramIndex) -> TaskScan | None:
    """:func:`scan_tasks` of a program whose every task is clean, a column at a time (each test
    of :func:`_scan_each` over all tasks at once), or None when some test fails: then some task
    may be unclean and the per-task scan tells which."""
    columns = ix.columns
    if columns is None or not columns.all_keyed:
        return None
    if not (
        columns.plain_ops
        and columns.params_dicts
        and _fields_fine(ix, columns)
        and (longest := ix.longest_waits) is not None
        and longest <= ABI_MAX_WAITS
        and ix.plain_out_counters
        and ix.counters.keys() >= ix.producers.keys()
        and _ops_fit(columns)
    ):
        return None
    return TaskScan([], _in_place(ix.tasks), _sms_fit(ix.tasks, _sm_range(ix)[1]))


def _fields_fine(ix: ProgramIndex, columns: TaskColumns) -> bool:
    """Every task's inputs and outputs are lists of known buffer ids, and its waits a list of Wait
    records each naming a known counter with a positive int32 threshold. The index's facts
    (:attr:`~amkspec.proofs.index.ProgramIndex.plain_inputs` ...) settle the types and the buffer
    ids when they hold; else every field is tested here."""
    if ix.plain_inputs and ix.plain_outputs and ix.plain_waits:
        return _waits_fine(ix)
    ins, outs, waits = columns.inputs, columns.outputs, columns.waits
    if not {*map(type, chain(ins, outs, waits))} <= {list}:
        return False
    n_in, n_out = list(map(len, ins)), list(map(len, outs))
    return (
        list(map(len, waits)) == list(map(len, ix.waits))
        and _tables_fine(ix)
        and _refs_known(ix, ins, outs, n_in, n_out)
    )


def _waits_fine(ix: ProgramIndex) -> bool:
    """Every wait names a known counter with a positive int32 threshold, for a program whose
    waits are :attr:`~amkspec.proofs.index.ProgramIndex.plain_waits` (every wait is then in the
    index's tables, its threshold an int): read off the index's lowest and highest thresholds."""
    highest = ix.max_threshold
    low = ix.lowest_threshold
    fits = low is None or (low >= 1 and max(highest.values()) <= INT32_MAX)
    return fits and ix.counters.keys() >= highest.keys()


def _table_fine(table: Sequence[tuple[int, int, Any]], counters: dict[int, Counter]) -> bool:
    """Every entry of one task's wait table names a known counter with a positive int32 threshold."""
    for _, c, t in table:  # noqa: SIM110 - a plain loop is 2-3x faster than all() over a generator
        if c not in counters or type(t) is not int or not 1 <= t <= INT32_MAX:
            return False
    return True


def _ops_fit(columns: TaskColumns) -> bool:
    """Every task's input and output counts are its opcode's arity within the ABI caps, and its
    params hold the opcode's required ones, each known and fitting (:func:`_params_clean`): tested
    once per distinct ``(op, inputs, outputs, params)``, the params by their exact key
    (:func:`~amkspec.ir.columns.param_key`, all present)."""
    ops, ins, outs, keys = columns.ops, columns.inputs, columns.outputs, columns.param_keys
    by_key = dict(zip(keys, columns.params, strict=True))
    for op, n_in, n_out, key in set(zip(ops, map(len, ins), map(len, outs), keys, strict=True)):
        arity = _ARITY.get(op)
        if arity is None or n_in not in arity[0] or n_out not in arity[1]:
            return False
        if not by_key[key].keys() >= arity[2]:
            return False
    return all(map(_params_clean, by_key.values()))


def _tables_fine(ix: ProgramIndex) -> bool:
    """Every entry of every wait table names a counter with a positive int32 threshold. Tables are
    taken once each (the index shares one table among the tasks with the same single wait); types
    are tested before any set is built (a set would keep one of ``1`` and ``True``)."""
    tables = dict(zip(map(id, ix.waits), ix.waits, strict=True)).values()
    entries = list(chain.from_iterable(tables))
    thresholds = list(map(itemgetter(2), entries))
    if not {*map(type, thresholds)} <= {int}:
        return False
    if thresholds and not (min(thresholds) >= 1 and max(thresholds) <= INT32_MAX):
        return False
    return ix.counters.keys() >= {*map(itemgetter(1), entries)}


def _refs_known(ix: ProgramIndex, ins: list[list[Any]], outs: list[list[Any]], n_in: list[int],
                n_out: list[int]) -> bool:
    """Every task's inputs and outputs are known buffer ids (:func:`_all_buffers`): the index kept
    all of them, or, where it kept fewer (a repeated id, or an unknown one), they all are."""
    return _kept_all(ix, ins, ix.inputs, n_in) and _kept_all(ix, outs, ix.outputs, n_out)


def _kept_all(ix: ProgramIndex, fields: list[list[Any]], kept: list[list[int]], counts: list[int]) -> bool:
    kept_counts = list(map(len, kept))
    if kept_counts == counts:
        return True
    refs = list(chain.from_iterable(map(fields.__getitem__, compress(count(), map(ne, kept_counts, counts)))))
    return {*map(type, refs)} <= {int} and ix.buffers.keys() >= set(refs)  # types first: True == 1


def _sms_fit(tasks: list[Task], top: int) -> bool:
    """Every task's sm is None or an int in ``[0, top]``."""
    sms: list[Any] = [t.sm for t in tasks]
    types = list(map(type, sms))  # counted, not made a set: faster when one type is all
    if sms and sms[0] is None and types.count(NoneType) == len(sms):
        return True  # no task assigned (most lowered programs)
    if types.count(int) != len(sms):
        if not {*types} <= {int, NoneType}:
            return False
        sms = [sm for sm in sms if sm is not None]
    placed = {*sms}  # the few SMs a schedule uses: faster than min and max over every task
    return not placed or (min(placed) >= 0 and max(placed) <= top)


def _all_buffers(ix: ProgramIndex, refs: list[Any]) -> bool:
    buffers = ix.buffers
    for b in refs:  # noqa: SIM110 - a plain loop is 2-3x faster than all() over a generator
        if type(b) is not int or b not in buffers:
            return False
    return True


def _params_clean(
    params: dict[Any, Any],
    _get: Any = PARAM_FIELDS.get,
    _lo: int = INT32_MIN,
    _hi: int = INT32_MAX,
    _f32: float = FLOAT32_MAX,
) -> bool:
    """Every param is known and fits its PARAM_FIELDS type. (The defaults bind the tables and
    bounds as locals: it runs once per task of a small program.)"""
    for key, value in params.items():
        kind = _get(key)
        if kind == "i" and type(value) is int and _lo <= value <= _hi:
            continue
        if kind == "f" and type(value) in (int, float) and -_f32 <= value <= _f32:
            continue
        return False
    return True


def check_task(ix: ProgramIndex, pos: int) -> Iterator[Diagnostic]:
    """Per-task structure: references, caps, thresholds, arity, params (spec §3.1, §7)."""
    task = ix.tasks[pos]
    who = ix.describe(pos)
    tid = [getattr(task, "id", None)]
    yield from _check_refs(ix, pos, who, tid)
    yield from _check_caps(task, who, tid)
    yield from _check_thresholds(task, who, tid)
    op = getattr(task, "op", None)
    spec = OP_REGISTRY.get(op) if isinstance(op, InstructionKind) else None
    if spec is None:
        yield diag(ARITY, f"task {who} has opcode {op!r}, which is not in OP_REGISTRY", tasks=tid)
    else:
        yield from _check_arity(task, spec.min_inputs, spec.max_inputs, spec.n_outputs, who, tid)
    params = getattr(task, "params", None)
    if not isinstance(params, dict):
        yield diag(PARAM_TYPE, f"task {who} params {params!r} is not a mapping", tasks=tid)
        return
    if spec is not None:
        for name in spec.required_params:
            if name not in params:
                yield diag(
                    MISSING_PARAM,
                    f"task {who} ({spec.kind.name}) is missing required param '{name}'",
                    tasks=tid,
                )
    yield from _check_params(params, who, tid)


def _check_refs(ix: ProgramIndex, pos: int, who: str, tid: list[Any]) -> Iterator[Diagnostic]:
    task = ix.tasks[pos]
    for field in ("inputs", "outputs"):
        refs = getattr(task, field, None)
        if not isinstance(refs, (list, tuple)):
            yield diag(UNKNOWN_BUFFER, f"task {who} {field} {refs!r} is not a list of buffer ids", tasks=tid)
            continue
        for i, b in enumerate(refs):
            if not (is_int(b) and b in ix.buffers):
                yield diag(
                    UNKNOWN_BUFFER,
                    f"task {who} {field}[{i}] = {b!r} is not a buffer id",
                    tasks=tid,
                    buffers=[b],
                )
    oc = getattr(task, "out_counter", None)
    if not (is_int(oc) and oc in ix.counters):
        yield diag(
            UNKNOWN_COUNTER, f"task {who} out_counter {oc!r} is not a counter id", tasks=tid, counters=[oc]
        )
    for i, w in enumerate(as_list(getattr(task, "waits", None))):
        c = getattr(w, "counter", None) if isinstance(w, Wait) else None
        if not (is_int(c) and c in ix.counters):
            what = f"waits on counter {c!r}" if isinstance(w, Wait) else f"has wait {w!r}"
            yield diag(
                UNKNOWN_COUNTER,
                f"task {who} waits[{i}] {what}, which is not a counter id",
                tasks=tid,
                counters=[c],
            )
    if not isinstance(getattr(task, "waits", None), (list, tuple)):
        yield diag(
            UNKNOWN_COUNTER, f"task {who} waits {getattr(task, 'waits', None)!r} is not a list", tasks=tid
        )


def _check_caps(task: Any, who: str, tid: list[Any]) -> Iterator[Diagnostic]:
    for field, cap, name in (
        ("inputs", ABI_MAX_INPUTS, "ABI_MAX_INPUTS"),
        ("outputs", ABI_MAX_OUTPUTS, "ABI_MAX_OUTPUTS"),
        ("waits", ABI_MAX_WAITS, "ABI_MAX_WAITS"),
    ):
        n = len(as_list(getattr(task, field, None)))
        if n > cap:
            yield diag(ABI_CAP, f"task {who} has {n} {field}, more than {name} ({cap})", tasks=tid)


def _check_thresholds(task: Any, who: str, tid: list[Any]) -> Iterator[Diagnostic]:
    for i, w in enumerate(as_list(getattr(task, "waits", None))):
        if not isinstance(w, Wait):
            continue
        t = w.threshold
        if not (is_int(t) and 1 <= t <= INT32_MAX):
            yield diag(
                BAD_THRESHOLD,
                f"task {who} waits[{i}] on counter {w.counter!r} has threshold {t!r}; "
                "a threshold must be a positive int",
                tasks=tid,
                counters=[w.counter],
            )


def _check_arity(task: Any, lo: int, hi: int, n_out: int, who: str, tid: list[Any]) -> Iterator[Diagnostic]:
    n_in = len(as_list(getattr(task, "inputs", None)))
    n_outputs = len(as_list(getattr(task, "outputs", None)))
    op = task.op.name
    if n_in < lo or (hi != VARIADIC and n_in > hi):
        want = f"{lo}..{hi}" if hi != VARIADIC else f"at least {lo}"
        yield diag(ARITY, f"task {who} ({op}) has {n_in} inputs; {op} takes {want}", tasks=tid)
    if n_out != VARIADIC and n_outputs != n_out:
        yield diag(ARITY, f"task {who} ({op}) has {n_outputs} outputs; {op} writes {n_out}", tasks=tid)


def param_problem(key: str, value: Any) -> str | None:
    """Why a known param's value does not marshal into ``amk_params_t`` (spec §7, §8), or None."""
    kind = PARAM_FIELDS[key]
    if kind == "i":
        if not is_int(value):
            return f"must be an int32, got {type(value).__name__} {value!r}"
        if not INT32_MIN <= value <= INT32_MAX:
            return f"= {value} is outside int32"
        return None
    if type(value) not in (int, float):
        return f"must be a real number, got {type(value).__name__} {value!r}"
    if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
        return f"= {value!r} is not a finite float32"
    return None


def _check_params(params: dict[Any, Any], who: str, tid: list[Any]) -> Iterator[Diagnostic]:
    for key, value in params.items():
        if key not in PARAM_FIELDS:
            yield diag(UNKNOWN_PARAM, f"task {who} has unknown param {key!r} (not marshalled)", tasks=tid)
            continue
        problem = param_problem(key, value)
        if problem is not None:
            yield diag(PARAM_TYPE, f"task {who} param '{key}' {problem}", tasks=tid)


# -- SM assignment ---------------------------------------------------------------------------


def check_sm(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """``sm`` is None or an int in ``[0, target.num_sms)`` (spec §3.1, §8: the loader rejects sm < 0)."""
    target = ix.prog.target
    limit, top = _sm_range(ix)
    for pos, task in enumerate(ix.tasks):
        sm = getattr(task, "sm", None)
        if sm is None or (type(sm) is int and 0 <= sm <= top):
            continue
        if not is_int(sm) or sm < 0 or (limit is not None and sm >= limit):
            where = (
                f"[0, {limit}) of target {getattr(target, 'name', '?')}" if limit is not None else "[0, 2^31)"
            )
            yield diag(
                BAD_SM,
                f"task {ix.describe(pos)} has sm {sm!r}, outside {where}",
                tasks=[ix.task_id(pos)],
            )
            ix.rejected_tasks.add(pos)


def _sm_range(ix: ProgramIndex) -> tuple[int | None, int]:
    """``(target.num_sms or None, the highest sm allowed)``."""
    target = ix.prog.target
    num_sms = getattr(target, "num_sms", None) if target is not None else None
    limit = num_sms if is_int(num_sms) else None
    return limit, INT32_MAX if limit is None else limit - 1


# -- page table ------------------------------------------------------------------------------


def page_index(ix: ProgramIndex) -> dict[int, Page]:
    """Page id → the first page record with that id."""
    pages = ix.prog.pages
    out: dict[int, Page] = {}
    if isinstance(pages, PageAllocation):
        for page in as_list(pages.pages):
            pid = getattr(page, "id", None)
            if isinstance(page, Page) and is_int(pid) and pid not in out:
                out[pid] = page
    return out


def check_pages(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """The page table binds existing ACTIVATION buffers to existing pages large enough (spec §1.6)."""
    alloc = ix.prog.pages
    if alloc is None:
        return
    if not isinstance(alloc, PageAllocation):
        yield diag(BAD_PAGE_TABLE, f"pages {alloc!r} is not a PageAllocation")
        return
    yield from _check_page_records(alloc)
    pages = page_index(ix)
    mapping = alloc.buffer_to_page if isinstance(alloc.buffer_to_page, dict) else {}
    for bid, pid in mapping.items():
        buf = ix.buffers.get(bid) if is_int(bid) else None
        page = pages.get(pid) if is_int(pid) else None
        if buf is None:
            yield diag(
                BAD_PAGE_TABLE, f"buffer_to_page binds {bid!r}, which is not a buffer id", buffers=[bid]
            )
            continue
        name = ix.buffer_name(bid)
        if page is None:
            yield diag(
                BAD_PAGE_TABLE, f"buffer {name} is bound to page {pid!r}, which does not exist", buffers=[bid]
            )
            continue
        if buf.kind is not BufferKind.ACTIVATION:
            kind = getattr(buf.kind, "name", buf.kind)
            yield diag(
                PAGED_NON_ACTIVATION,
                f"buffer {name} of kind {kind} is bound to page {pid}; only ACTIVATION buffers are paged",
                buffers=[bid],
            )
        need = buffer_nbytes(buf)
        if need is not None and is_int(page.nbytes) and page.nbytes < need:
            yield diag(
                PAGE_TOO_SMALL,
                f"page {pid} has {page.nbytes} bytes but buffer {name} needs {need}",
                buffers=[bid],
            )


def _check_page_records(alloc: PageAllocation) -> Iterator[Diagnostic]:
    seen: set[int] = set()
    if not isinstance(alloc.buffer_to_page, dict):
        yield diag(BAD_PAGE_TABLE, f"buffer_to_page {alloc.buffer_to_page!r} is not a mapping")
    for i, page in enumerate(as_list(alloc.pages)):
        pid = getattr(page, "id", None)
        if not isinstance(page, Page) or not is_int(pid):
            yield diag(BAD_PAGE_TABLE, f"pages[{i}] = {page!r} is not a page with an int id")
        elif pid in seen:
            yield diag(DUPLICATE_ID, f"two pages share id {pid}")
        elif not (is_int(page.nbytes) and page.nbytes >= 0):
            yield diag(BAD_PAGE_TABLE, f"page {pid} has nbytes {page.nbytes!r}, not a non-negative int")
        if is_int(pid):
            seen.add(pid)
