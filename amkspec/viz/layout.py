"""A layered layout of the task graph, in pure Python (spec §2, the producer→consumer DAG).

Layers are depths: a task sits one layer right of its deepest producer (longest
path from the tasks that wait for nothing). Within a layer, tasks are ordered by
the barycentre heuristic (a few sweeps that move each task towards the mean row of
its neighbours) to reduce crossings. A cycle has no depths: its tasks are placed
after their already-placed producers, in list order, so a broken program still
draws. Programs above :data:`MAX_GRAPH_TASKS` are cut down to the highlighted
tasks' neighbourhood, or to the first tasks by depth, and the scene says so.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Collection, Iterable

import attrs

from amkspec.viz.program import ProgramIndex

MAX_GRAPH_TASKS = 120
"""The most tasks a program graph draws."""

SWEEPS = 4


@attrs.frozen
class Port:
    """Wait ``k`` of task ``task``: ``counter ≥ threshold``, met by ``producers`` (drawn ones)."""

    task: int
    k: int
    counter: int
    threshold: int
    producers: tuple[int, ...]
    all_producers: int


@attrs.frozen
class GraphScene:
    """Positions (layer, row) of the drawn tasks, their wait ports and SM-queue edges."""

    title: str
    note: str
    layer: dict[int, int]
    row: dict[int, float]
    ports: tuple[Port, ...]
    queue_edges: tuple[tuple[int, int], ...]
    highlight: frozenset[int]
    marked_as: str = "tasks of the finding"
    """What the legend calls the outlined tasks."""

    @property
    def tasks(self) -> list[int]:
        return list(self.layer)


def _successors(ix: ProgramIndex, keep: Collection[int] | None = None) -> dict[int, list[int]]:
    succ: dict[int, list[int]] = defaultdict(list)
    for t in ix.order if keep is None else [t for t in ix.order if t in keep]:
        for c, _ in ix.waits.get(t, ()):
            for p in ix.producers.get(c, ()):
                if keep is None or p in keep:
                    succ[p].append(t)
    return succ


def depths(ix: ProgramIndex, keep: Collection[int] | None = None) -> dict[int, int]:
    """Longest-path layer of every task (of ``keep``, when given); tasks on a cycle come after
    their placed producers (O(tasks + edges))."""
    nodes = list(ix.order) if keep is None else [t for t in ix.order if t in keep]
    succ = _successors(ix, keep)
    indeg: dict[int, int] = dict.fromkeys(nodes, 0)
    for p in nodes:
        for s in succ.get(p, ()):
            indeg[s] += 1
    depth = dict.fromkeys(nodes, 0)
    queue = deque(t for t in nodes if indeg[t] == 0)
    done: set[int] = set()
    while queue:
        t = queue.popleft()
        done.add(t)
        for s in succ.get(t, ()):
            depth[s] = max(depth[s], depth[t] + 1)
            indeg[s] -= 1
            if indeg[s] == 0:
                queue.append(s)
    for t in nodes:  # the tasks of cycles, and what hangs off them
        if t not in done:
            placed = [depth[p] + 1 for p in _preds_in(ix, t, done)]
            depth[t] = max(placed, default=0)
            done.add(t)
    return depth


def _preds_in(ix: ProgramIndex, task: int, among: Collection[int]) -> list[int]:
    return [p for c, _ in ix.waits.get(task, ()) for p in ix.producers.get(c, ()) if p in among]


def _select(ix: ProgramIndex, highlight: Collection[int], limit: int) -> tuple[list[int], str]:
    if len(ix.order) <= limit:
        return list(ix.order), ""
    if highlight:
        succ = _successors(ix)
        near = list(
            dict.fromkeys(
                [
                    *highlight,
                    *(p for t in highlight for p in ix.preds(t)),
                    *(s for t in highlight for s in succ.get(t, ())),
                ]
            )
        )
        chosen = set(near[:limit])
        note = (
            f"{len(chosen)} of {len(ix.order)} tasks: the highlighted ones and their direct "
            "predecessors and successors"
        )
    else:
        depth = depths(ix)
        chosen = set(sorted(ix.order, key=lambda t: depth[t])[:limit])
        note = f"the first {limit} of {len(ix.order)} tasks by depth"
    return [t for t in ix.order if t in chosen], note


def _order_layers(layer: dict[int, int], edges: list[tuple[int, int]]) -> dict[int, float]:
    """Rows within layers by barycentre sweeps; each layer centred on row 0."""
    by_layer: dict[int, list[int]] = defaultdict(list)
    for t, d in layer.items():
        by_layer[d].append(t)
    preds: dict[int, list[int]] = defaultdict(list)
    succs: dict[int, list[int]] = defaultdict(list)
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)
    pos = {t: float(i) for ts in by_layer.values() for i, t in enumerate(ts)}
    levels = sorted(by_layer)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        for d in levels if down else reversed(levels):
            nbrs = preds if down else succs
            ts = by_layer[d]
            ts.sort(key=lambda t: _mean([pos[n] for n in nbrs[t] if n in pos], pos[t]))
            for i, t in enumerate(ts):
                pos[t] = float(i)
    return {t: pos[t] - (len(by_layer[layer[t]]) - 1) / 2 for t in layer}


def _mean(values: list[float], default: float) -> float:
    return sum(values) / len(values) if values else default


def neighbourhood(ix: ProgramIndex, task: int, hops: int) -> list[int]:
    """``task`` and every task at most ``hops`` producer→consumer edges away, in list order."""
    succ = _successors(ix)
    seen, frontier = {task}, [task]
    for _ in range(hops):
        frontier = [n for t in frontier for n in (*ix.preds(t), *succ.get(t, ())) if n not in seen]
        seen.update(frontier)
    return [t for t in ix.order if t in seen]


def graph_scene(
    ix: ProgramIndex, highlight: Iterable[int] = (), title: str = "", limit: int = MAX_GRAPH_TASKS,
    select: tuple[Collection[int], str] | None = None, marked_as: str = "tasks of the finding",
) -> GraphScene:
    """Lay out the task graph of the indexed program, highlighting ``highlight``; ``select`` (tasks, a
    note saying which) draws those tasks only (at most ``limit``)."""
    marked = [t for t in dict.fromkeys(highlight) if t in ix.names]
    if select is None:
        tasks, note = _select(ix, marked, limit)
    else:
        chosen, note = select
        tasks = [t for t in ix.order if t in set(chosen)][:limit]
        if len(tasks) < len([t for t in ix.order if t in set(chosen)]):
            note += f" (the first {limit})"
    keep = set(tasks)
    layer = depths(ix, keep)
    ports: list[Port] = []
    edges: list[tuple[int, int]] = []
    for t in tasks:
        for k, (c, th) in enumerate(ix.waits.get(t, ())):
            producers = ix.producers.get(c, ())
            drawn = tuple(p for p in producers if p in keep)
            ports.append(Port(t, k, c, th, drawn, sum(ix.stands_for.get(p, 1) for p in producers)))
            edges.extend((p, t) for p in drawn)
    queue = tuple((p, t) for t, p in ix.queue_prev.items() if t in marked and p in marked)
    return GraphScene(title, note, layer, _order_layers(layer, edges), tuple(ports), queue, frozenset(marked),
                      marked_as)
