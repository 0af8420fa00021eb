"""The program facts the pictures need, indexed once: names, SMs, producers, waits (spec §2).

Pure Python over :mod:`amkspec.ir`; tolerant of broken programs (a dangling
counter simply has no producers, a non-integer id is skipped) because a picture
is most wanted for a program the validator rejects. Names and notes are kept with
their control characters escaped (:func:`amkspec.text.escape_line`), as the text
reports show them.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from amkspec.ir import MegakernelProgram
from amkspec.text import escape_line


@attrs.frozen
class ProgramIndex:
    """Task ids in list order, their ``id:label`` names, opcodes, SMs, waits and the producers
    of every counter (spec §2), plus the SM-queue predecessor of each assigned task (spec §3.2)."""

    order: tuple[int, ...]
    names: dict[int, str]
    ops: dict[int, str]
    sms: dict[int, int | None]
    waits: dict[int, tuple[tuple[int, int], ...]]
    out_counter: dict[int, int]
    producers: dict[int, tuple[int, ...]]
    queue_prev: dict[int, int]
    counter_init: dict[int, int]
    counter_note: dict[int, str]
    stands_for: dict[int, int] = attrs.Factory(dict)
    """Tasks a drawn task stands for (a collapsed tile group, :func:`collapse_tiles`); 1 if absent."""

    def name(self, task: int) -> str:
        """``id:label`` (spec §1), or the bare id of a task the program does not hold."""
        return self.names.get(task, str(task))

    def preds(self, task: int) -> list[int]:
        """Direct predecessors: the producers of each wait, then the SM-queue predecessor."""
        out = [p for c, _ in self.waits.get(task, ()) for p in self.producers.get(c, ())]
        if task in self.queue_prev:
            out.append(self.queue_prev[task])
        return list(dict.fromkeys(out))

    def counter_name(self, counter: int) -> str:
        """``c0`` or ``c0 · note``."""
        note = self.counter_note.get(counter, "")
        return f"c{counter} · {note}" if note else f"c{counter}"


def index_program(prog: MegakernelProgram) -> ProgramIndex:
    """Index ``prog`` in one pass over its tasks (O(tasks + waits))."""
    order: list[int] = []
    names: dict[int, str] = {}
    ops: dict[int, str] = {}
    sms: dict[int, int | None] = {}
    waits: dict[int, tuple[tuple[int, int], ...]] = {}
    out_counter: dict[int, int] = {}
    producers: dict[int, list[int]] = defaultdict(list)
    queue_prev: dict[int, int] = {}
    last_on_sm: dict[int, int] = {}
    for t in prog.tasks:
        if type(t.id) is not int or t.id in names:
            continue
        order.append(t.id)
        names[t.id] = escape_line(t.describe() if hasattr(t.op, "name") else f"{t.id}:{t.label}")
        ops[t.id] = getattr(t.op, "name", str(t.op))
        sm = t.sm if type(t.sm) is int else None
        sms[t.id] = sm
        waits[t.id] = tuple(
            (w.counter, w.threshold) for w in t.waits if type(w.counter) is int and type(w.threshold) is int
        )
        if type(t.out_counter) is int:
            out_counter[t.id] = t.out_counter
            producers[t.out_counter].append(t.id)
        if sm is not None:
            if sm in last_on_sm:
                queue_prev[t.id] = last_on_sm[sm]
            last_on_sm[sm] = t.id
    init = {c.id: c.init for c in prog.counters if type(c.id) is int and type(c.init) is int}
    notes = {c.id: escape_line(c.note) for c in prog.counters
             if type(c.id) is int and isinstance(c.note, str)}
    return ProgramIndex(
        tuple(order),
        names,
        ops,
        sms,
        waits,
        out_counter,
        {c: tuple(ps) for c, ps in producers.items()},
        queue_prev,
        init,
        notes,
    )


def _tile_group(ix: ProgramIndex, task: int) -> tuple[object, ...] | None:
    """What the column tiles of one projection share (opcode, counter, waits, label stem), or None."""
    name = ix.names.get(task, "")
    stem, bracket, rest = name.partition(":")[2].rpartition("[t")
    if not bracket or not rest.rstrip("]").isdigit() or task not in ix.out_counter:
        return None
    return ix.ops.get(task), ix.out_counter[task], ix.waits.get(task, ()), stem


def collapse_tiles(ix: ProgramIndex) -> tuple[ProgramIndex, dict[int, int]]:
    """``ix`` with the column tiles of each projection (``label[t<i>]`` tasks of one opcode, counter and
    waits) drawn as one task, the first, named ``label[t0…t<k−1>] ×k`` (it stands for k tasks); and
    the task that stands for each task."""
    first: dict[tuple[object, ...], int] = {}
    rep: dict[int, int] = {}
    for t in ix.order:
        key = _tile_group(ix, t)
        rep[t] = t if key is None else first.setdefault(key, t)
    count: dict[int, int] = defaultdict(int)
    for t in ix.order:
        count[rep[t]] += 1
    order = tuple(t for t in ix.order if rep[t] == t)
    names = dict(ix.names)
    for t in order:
        if count[t] > 1:
            stem = names[t].rpartition("[t")[0]
            names[t] = f"{stem}[t0…t{count[t] - 1}] ×{count[t]}"
    producers = {c: tuple(dict.fromkeys(rep[p] for p in ps)) for c, ps in ix.producers.items()}
    keep = set(order)
    collapsed = attrs.evolve(
        ix, order=order, names={t: names[t] for t in order}, producers=producers,
        queue_prev={t: rep[p] for t, p in ix.queue_prev.items() if t in keep and rep[p] != t},
        stands_for={t: count[t] for t in order if count[t] > 1},
    )
    return collapsed, rep
