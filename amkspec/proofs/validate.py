"""``validate(prog)``: discharge every proof obligation of spec §3 algorithmically.

The families run in a fixed order on one :class:`ProgramIndex`: structure (S1xx),
deadlock (D2xx), races (R3xx), memory safety (M4xx), outputs and launch (O5xx).
Checks that need a topological order (provenance, write-write, SM queues, page
aliasing) run only on an acyclic graph, as their premises require. There is no
task-count cap. ``validate`` never raises: an internal failure becomes the
finding S199, which rejects the program (a program we cannot judge never runs).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from itertools import compress
from typing import Any

from amkspec.ir import WEIGHT_KINDS, MegakernelProgram
from amkspec.ir.gcpause import gc_paused
from amkspec.proofs import deadlock, outputs, races, structure
from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.memory import check_memory_safety
from amkspec.proofs.result import ValidationResult

INTERNAL_ERROR = register(
    "S199", Family.STRUCTURE, Severity.ERROR, "internal validator error (the program is rejected)"
)

Check = Callable[[ProgramIndex], Iterable[Diagnostic]]


def _memory(ix: ProgramIndex) -> list[Diagnostic]:
    """Memory-safety findings (M4xx), except on tasks a structure check already rejected."""
    skip = {ix.task_id(p) for p in ix.rejected_tasks}
    return [d for d in check_memory_safety(ix.prog, ix) if not (set(d.tasks) & skip)]


CHECKS: tuple[tuple[str, Check], ...] = (
    ("structure", structure.check_structure),
    ("waits", deadlock.check_waits),
    ("cycle", deadlock.check_cycle),
    ("sm queues", deadlock.check_sm_queues),
    ("all-join", races.check_all_join),
    ("read-only writes", races.check_readonly_writes),
    ("provenance", races.check_provenance),
    ("write-write", races.check_write_write),
    ("coverage", races.check_coverage),
    ("on-chip", races.check_on_chip),
    ("page aliasing", races.check_page_aliasing),
    ("memory safety", _memory),
    ("outputs", outputs.check_outputs),
    ("gpu label", outputs.check_gpu_label),
    ("launch", outputs.check_launch),
)
"""Every check of :func:`validate`, in the order it runs."""


def validate(prog: MegakernelProgram) -> ValidationResult:
    """Judge ``prog`` against every obligation of spec §3; never raises, no size cap.

    The cyclic garbage collector is paused while the index is built and the checks run:
    they allocate many small acyclic containers, and on a 100k-task program the collector's
    repeated full sweeps would otherwise dominate the run time.
    """
    with gc_paused():
        return _validate(prog)


def validated(prog: MegakernelProgram, given: ValidationResult | None = None) -> ValidationResult:
    """``given`` (the caller's result of :func:`validate` on this very ``prog``) when its stats count
    ``prog``'s tasks, buffers and counters, else ``validate(prog)``: a command validates once."""
    if given is not None and given.describes(prog):
        return given
    return validate(prog)


def _validate(prog: MegakernelProgram) -> ValidationResult:
    found: list[Diagnostic] = []
    ix: ProgramIndex | None = None
    try:
        ix = ProgramIndex(prog)
    except Exception as exc:  # noqa: BLE001 - the clean-signal contract: never raise
        return ValidationResult([_internal("indexing", exc)], {})
    for name, check in CHECKS:
        try:
            found.extend(check(ix))
        except Exception as exc:  # noqa: BLE001 - one failing check must not hide the others
            found.append(_internal(name, exc))
    try:
        stats = _stats(ix)
    except Exception as exc:  # noqa: BLE001 - the clean-signal contract: never raise
        return ValidationResult([*found, _internal("statistics", exc)], {})
    return ValidationResult(found, stats)


def _internal(where: str, exc: BaseException) -> Diagnostic:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    return diag(INTERNAL_ERROR, f"internal error in the {where} check: {type(exc).__name__}: {exc}{at}")


def _sm_assigned(tasks: list[Any]) -> bool:
    """Some task's ``sm`` is an int (:func:`~amkspec.proofs.index.is_int`): the first task's (as
    in a program whose tasks are all placed), else one found a column at a time."""
    if tasks and type(getattr(tasks[0], "sm", None)) is int:
        return True
    try:
        sms = [t.sm for t in tasks]
    except AttributeError:  # a record without an sm has none
        sms = [getattr(t, "sm", None) for t in tasks]
    return int in {*map(type, sms)}


def _weight_kind(kind: Any) -> bool:
    """Whether ``kind`` is a WEIGHT or CONST kind; an unhashable one is not."""
    try:
        return kind in WEIGHT_KINDS
    except TypeError:
        return False


def _stats(ix: ProgramIndex) -> dict[str, Any]:
    """Statistics of the original (tasks, buffers, counters, edges, acyclic, weight_MB, sm_assigned)
    plus the reachability work done."""
    try:
        weighed = list(map(WEIGHT_KINDS.__contains__, ix.buffer_kinds))
    except TypeError:  # an unhashable kind, which the structure checks report, is no weight kind
        weighed = list(map(_weight_kind, ix.buffer_kinds))
    weights = compress(ix.buffers.values(), weighed)
    weight = structure.total_nbytes(list(weights), well_formed=ix.buffers_well_formed)
    reach = ix.built_reach
    return {
        "tasks": ix.n,
        "buffers": len(ix.prog.buffers) if isinstance(ix.prog.buffers, list) else 0,
        "counters": len(ix.prog.counters) if isinstance(ix.prog.counters, list) else 0,
        "edges": ix.n_edges,
        "acyclic": ix.acyclic,
        "weight_MB": round(weight / 1e6, 2),
        "sm_assigned": _sm_assigned(ix.tasks),
        "reach_queries": reach.queries if reach is not None else 0,
        "bitset_passes": reach.bitset_passes if reach is not None else 0,
    }
