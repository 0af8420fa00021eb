"""What keeping a program index across ``validate()`` calls would cost (issue 13).

Run: ``python3 benchmarks/index_cache.py [--tasks N] [--repeat N] [--write-results]``.

Issue 13 suggests building the program index once and caching it, "safely against mutation
(frozen records or a version stamp)". The records are mutable attrs classes that hold plain
lists and dicts, so a cache is only safe if it can tell that nothing changed. This script measures
the two ways of knowing that, on a loaded layered program, next to what they would save:

* **a version stamp or frozen records**: every record's ``__init__`` pays for it. The script
  builds every task of the program again with three classes made from :class:`~amkspec.ir.Task`'s
  own attrs fields: as defined today, with an ``on_setattr`` hook (the stamp), and frozen. A stamp
  alone still misses in-place edits of the lists and dicts (``task.inputs.append(3)``).
* **comparing against a snapshot**: read back, in C (``map``, ``attrgetter``, list and dict
  equality, ``orjson`` for the params), everything ``validate()`` reads of the tasks, and compare
  it with a copy taken when the index was built.

and, per call, what a cache would save (building the index) and what would remain: every check,
run on an index built earlier with every task's footprint.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any

import attrs
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tables import write_result
from timing import median_cpu

from amkspec.ir import MegakernelProgram, Task, Wait, dumps, loads
from amkspec.ir.gcpause import gc_paused
from amkspec.programs.families import decoder_layers
from amkspec.proofs import validate
from amkspec.proofs.index import ProgramIndex
from amkspec.proofs.validate import CHECKS

Snapshot = tuple[list[Task], list[tuple[Any, ...]], list[list[Any]], list[list[Any]], list[Any], bytes]


def task_class(**options: Any) -> type:
    """A slotted class with :class:`Task`'s attrs fields, made by ``attrs.make_class`` with ``options``."""
    fields = {
        a.name: attrs.field(default=a.default, kw_only=a.kw_only) for a in attrs.fields(Task)
    }
    return attrs.make_class("Task", fields, slots=True, **options)


def _stamp(instance: Any, attribute: Any, value: Any) -> Any:
    return value


def construction(prog: MegakernelProgram) -> list[tuple[str, Callable[[], object]]]:
    """Build every task of ``prog`` again with the plain, stamped and frozen task classes."""
    rows = [attrs.astuple(t, recurse=False) for t in prog.tasks]
    names = [a.name for a in attrs.fields(Task)]
    kw_at = next(i for i, a in enumerate(attrs.fields(Task)) if a.kw_only)
    classes = {
        "as defined (attrs.define)": task_class(),
        "with a version stamp (on_setattr hook)": task_class(
            on_setattr=[attrs.setters.convert, attrs.setters.validate, _stamp]
        ),
        "frozen (attrs.frozen)": task_class(frozen=True),
    }

    def build(cls: type) -> Callable[[], object]:
        kw_names = names[kw_at:]
        return lambda: [cls(*r[:kw_at], **dict(zip(kw_names, r[kw_at:], strict=True))) for r in rows]

    return [(name, build(cls)) for name, cls in classes.items()]


_ROW = attrgetter(*(a.name for a in attrs.fields(Task)))
_WAIT = attrgetter(*(a.name for a in attrs.fields(Wait)))
_INPUTS, _OUTPUTS, _WAITS, _PARAMS = (attrgetter(f) for f in ("inputs", "outputs", "waits", "params"))


def snapshot(tasks: list[Task]) -> Snapshot:
    """A copy of everything ``validate()`` reads of ``tasks`` (the records' fields, the lists'
    items, the waits' fields, the params by value)."""
    return (
        tasks.copy(),
        list(map(_ROW, tasks)),
        [list(x) for x in map(_INPUTS, tasks)],
        [list(x) for x in map(_OUTPUTS, tasks)],
        list(map(_WAIT, chain.from_iterable(map(_WAITS, tasks)))),
        orjson.dumps(list(map(_PARAMS, tasks))),
    )


def unchanged(tasks: list[Task], snap: Snapshot) -> bool:
    """Whether ``tasks`` still hold what ``snap`` copied, compared in C."""
    same, rows, ins, outs, waits, params = snap
    return (
        tasks == same
        and list(map(_ROW, tasks)) == rows
        and list(map(_INPUTS, tasks)) == ins
        and list(map(_OUTPUTS, tasks)) == outs
        and list(map(_WAIT, chain.from_iterable(map(_WAITS, tasks)))) == waits
        and orjson.dumps(list(map(_PARAMS, tasks))) == params
    )


def index(prog: MegakernelProgram, footprints: bool = False) -> ProgramIndex:
    """Build the program index with its task columns, as ``validate()`` does first, and with
    ``footprints`` every task's footprint too (the collector paused, as in ``validate()``)."""
    with gc_paused():
        ix = ProgramIndex(prog)
        ix.columns  # noqa: B018 - built on first use, shared by several checks
        for pos in range(ix.n if footprints else 0):
            ix.regions(pos)
    return ix


def checks_alone(prog: MegakernelProgram, repeat: int) -> float:
    """Median CPU seconds of every check of ``validate()`` on an index already built with every
    footprint (a fresh one per run, built outside the timing): what a call would still cost if
    the index and the footprints were kept between calls."""
    built = [index(prog, footprints=True) for _ in range(repeat)]
    times = []
    for ix in built:
        with gc_paused():
            start = time.process_time()
            for _, check in CHECKS:
                list(check(ix))
            times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    prog = loads(dumps(decoder_layers(args.tasks)))
    snap = snapshot(prog.tasks)
    assert unchanged(prog.tasks, snap)
    prog.tasks[len(prog.tasks) // 2].inputs.append(0)
    assert not unchanged(prog.tasks, snap), "the snapshot misses an in-place edit"
    prog = loads(dumps(decoder_layers(args.tasks)))
    snap = snapshot(prog.tasks)
    measured: list[tuple[str, str, Callable[[], object]]] = [
        ("per call", "validate() today", lambda: validate(prog)),
        ("a cache would save", "building the program index", lambda: index(prog)),

        ("per call, to stay safe", "compare with a snapshot", lambda: unchanged(prog.tasks, snap)),
        ("once, when cached", "take the snapshot", lambda: snapshot(prog.tasks)),
    ]
    measured += [("per load, to stay safe", f"build the tasks {name}", fn) for name, fn in construction(prog)]
    rows = [f"| {len(prog.tasks):,} tasks | what | ms |", "|---|---|---:|"]
    print(f"layered program, {len(prog.tasks):,} tasks, median of {args.repeat}:")
    timed = [(when, what, median_cpu(fn, args.repeat)) for when, what, fn in measured]
    timed.insert(2, ("per call, with a cache", "every check, on the index and footprints kept",
                     checks_alone(prog, args.repeat)))
    for when, what, seconds in timed:
        row = f"| {when} | {what} | {seconds * 1e3:.2f} |"
        print("  " + row)
        rows.append(row)
    if args.write_results:
        write_result("validate_cache_costs.md", rows)


if __name__ == "__main__":
    main()
