"""The program graph: tasks layered by depth left to right, coloured by opcode, each wait a port
on the task's left side labelled ``counter ≥ threshold`` (spec §2 producer→consumer DAG, §7).

The layout is :mod:`amkspec.viz.layout` (pure Python); this module only draws it.
A highlighted task (the tasks of one finding) gets a red outline and the edges
between highlighted tasks turn red; a wait whose counter no task increments ends
in a red stub. Element ids: ``task-<id>``, ``highlight-<id>``,
``edge-<producer>-<task>-c<counter>``, ``queue-<a>-<b>``, ``dangling-<task>-c<counter>``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from amkspec.ir import AmkspecError, MegakernelProgram
from amkspec.viz import canvas
from amkspec.viz.layout import GraphScene, Port, graph_scene, neighbourhood
from amkspec.viz.palette import INK, MUTED, VIOLATION, op_colour
from amkspec.viz.program import ProgramIndex, collapse_tiles, index_program
from amkspec.viz.scene import gid

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LABEL_CHARS = 30
"""Task names longer than this are cut with an ellipsis (the full name is in the witness table)."""
CHAR_IN = 0.058
GAP_IN = 1.25
"""Horizontal room between layers, for the edges and their ``c ≥ t`` labels."""
ROW_IN = 0.62
PORT_IN = 0.11
DEEP_RATIO = 3.0
"""A graph whose left-to-right drawing is this many times wider than tall is drawn top down."""
TB_LAYER_IN = 1.0
TB_ROW_GAP_IN = 0.35
BACK_RAD = 0.5
"""Curvature of edges that run right to left (a cycle, an SM queue)."""


def graph_figure(
    prog: MegakernelProgram, highlight: Iterable[int] = (), title: str = "", prefix: str = "",
    focus: Focus | None = None,
) -> Figure:
    """Draw ``prog``'s task graph, outlining the tasks in ``highlight``; element ids start with
    ``prefix``. ``focus`` draws one decoder layer or one task's neighbourhood, each projection's
    column tiles as one box (:func:`~amkspec.viz.program.collapse_tiles`)."""
    ix = index_program(prog)
    if focus is None:
        return draw_graph(graph_scene(ix, highlight, title), ix, prefix)
    ix, rep = collapse_tiles(ix)
    chosen = focus.tasks(prog, ix, rep)
    marked = [rep[t] for t in highlight if t in rep]
    label = "tasks of the finding"
    if focus.around is not None and not marked:
        marked, label = [rep[focus.around]], f"task {focus.around}"
    scene = graph_scene(ix, marked, title, FOCUS_TASKS, (chosen, focus.note(prog)), label)
    return draw_graph(scene, ix, prefix)


FOCUS_TASKS = 200
"""The most boxes a focused picture draws (a decoder layer is about twenty once tiles collapse)."""


@attrs.frozen
class Focus:
    """Draw decoder layer ``layer`` (the tasks labelled ``L<layer>.…``) or the tasks within ``hops``
    edges of task ``around``."""

    layer: int | None = None
    around: int | None = None
    hops: int = 2

    def tasks(self, prog: MegakernelProgram, ix: ProgramIndex, rep: dict[int, int]) -> list[int]:
        if self.layer is not None:
            stem = f"L{self.layer}."
            found = {rep[t.id] for t in prog.tasks if isinstance(t.label, str) and t.label.startswith(stem)
                     and t.id in rep}
            if not found:
                raise NoFocus(f"no task is labelled {stem}…: --layer draws a layer of a lowered decoder "
                              f"(layers 0..{prog.meta.get('n_layers', '?')})")
            return [t for t in ix.order if t in found]
        if self.around is None or self.around not in rep:
            raise NoFocus(f"there is no task {self.around}")
        return neighbourhood(ix, rep[self.around], self.hops)

    def note(self, prog: MegakernelProgram) -> str:
        what = f"decoder layer {self.layer}" if self.layer is not None else \
            f"task {self.around} and the tasks within {self.hops} edges of it"
        return f"{what} of {len(prog.tasks)} tasks; each projection's column tiles drawn as one box"


class NoFocus(AmkspecError, ValueError):
    """The layer or task to draw does not exist."""


def _short(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


class _Graph:
    def __init__(self, scene: GraphScene, ix: ProgramIndex, prefix: str) -> None:
        self.s, self.ix, self.prefix = scene, ix, prefix
        longest = max((len(_short(ix.name(t))) for t in scene.tasks), default=8)
        self.box_w = max(longest, 12) * CHAR_IN + 0.2
        self.waits = {t: len(ix.waits.get(t, ())) for t in scene.tasks}
        self.layers = max(scene.layer.values(), default=0) + 1
        self.rows = max((abs(r) for r in scene.row.values()), default=0.0)
        across = self.layers * (self.box_w + GAP_IN)
        # deep, narrow graphs are drawn top down (layers as rows), others left to right
        self.down = self.layers > 6 and across > DEEP_RATIO * (2 * self.rows + 1) * ROW_IN
        self.layer_step = TB_LAYER_IN if self.down else self.box_w + GAP_IN
        self.row_step = self.box_w + TB_ROW_GAP_IN if self.down else ROW_IN

    def gid(self, *parts: object) -> str:
        return self.prefix + gid(*parts)

    def at(self, task: int) -> tuple[float, float]:
        """Centre of a task's box, in inches (y up)."""
        depth, row = self.s.layer[task] * self.layer_step, self.s.row[task] * self.row_step
        return (row, -depth) if self.down else (depth + self.box_w / 2, -row)

    def box_h(self, task: int) -> float:
        return 0.36 if self.down else max(0.34, (self.waits.get(task, 0) + 1) * PORT_IN)

    def port(self, p: Port) -> tuple[float, float]:
        """Where wait ``p`` enters its task: the left side (left to right) or the top (top down)."""
        x, y = self.at(p.task)
        m = self.waits[p.task]
        if self.down:
            return x + (p.k - (m - 1) / 2) * self.box_w / max(m, 1), y + self.box_h(p.task) / 2
        return x - self.box_w / 2, y + ((m - 1) / 2 - p.k) * PORT_IN

    def exit(self, task: int) -> tuple[float, float]:
        """Where a task's out-edges leave it: the right side, or the bottom."""
        x, y = self.at(task)
        return (x, y - self.box_h(task) / 2) if self.down else (x + self.box_w / 2, y)

    def _arc_room(self) -> float:
        """Height the arcs of back edges (cycles, SM queues) bulge above or below the rows."""
        along = 1 if self.down else 0
        spans = [
            abs(self.at(src)[along] - self.at(p.task)[along])
            for p in self.s.ports
            for src in p.producers
            if self.s.layer[src] >= self.s.layer[p.task]
        ]
        spans += [abs(self.at(a)[along] - self.at(b)[along]) for a, b in self.s.queue_edges]
        return max(spans, default=0.0) * BACK_RAD / 2 + (0.2 if spans else 0.0)

    def draw(self) -> Figure:
        deep = self.layers * self.layer_step - (self.layer_step - self.box_w if not self.down else 0) + 0.6
        wide = (2 * self.rows + 1) * self.row_step + 0.4 + 2 * self._arc_room()
        width, height = (wide, deep) if self.down else (deep, wide)
        title = textwrap.wrap(self.s.title, max(40, int(width / 0.075))) if self.s.title else []
        note = textwrap.wrap(self.s.note, max(40, int(width / 0.062))) if self.s.note else []
        head = 0.1 + 0.2 * len(title) + 0.17 * len(note)
        foot = 0.45
        total = head + height + foot
        fig = canvas.new_figure(max(width, 5.0), total)
        if title:
            canvas.heading(fig, title, 0.05, total, self.gid("title"))
        if note:
            canvas.heading(fig, note, 0.1 + 0.2 * len(title), total, self.gid("subset"), note=True)
        ax = fig.add_axes((0.0, foot / total, width / max(width, 5.0), height / total))
        room = (self.rows + 0.5) * self.row_step + 0.2 + self._arc_room()
        if self.down:
            ax.set_xlim(-room, room)
            ax.set_ylim(-(height - 0.3), 0.3)
        else:
            ax.set_xlim(-0.3, width - 0.3)
            ax.set_ylim(-room, room)
        ax.set_axis_off()
        for p in self.s.ports:
            self._port(ax, p)
        for a, b in self.s.queue_edges:
            self._queue(ax, a, b)
        for t in self.s.tasks:
            self._node(ax, t)
        self._legend(fig)
        return fig

    def _node(self, ax: Axes, t: int) -> None:
        from matplotlib.patches import FancyBboxPatch

        x, y = self.at(t)
        h = self.box_h(t)
        marked = t in self.s.highlight
        ax.add_patch(
            FancyBboxPatch(
                (x - self.box_w / 2, y - h / 2),
                self.box_w,
                h,
                boxstyle="round,pad=0,rounding_size=0.05",
                facecolor=op_colour(self.ix.ops.get(t, "")),
                edgecolor=INK,
                lw=0.8,
                zorder=3,
                gid=self.gid("task", t),
            )
        )
        if marked:
            ax.add_patch(
                FancyBboxPatch(
                    (x - self.box_w / 2 - 0.04, y - h / 2 - 0.04),
                    self.box_w + 0.08,
                    h + 0.08,
                    boxstyle="round,pad=0,rounding_size=0.07",
                    fill=False,
                    edgecolor=VIOLATION,
                    lw=2.4,
                    zorder=4,
                    gid=self.gid("highlight", t),
                )
            )
        sm = self.ix.sms.get(t)
        sub = self.ix.ops.get(t, "") + (f" · SM {sm}" if sm is not None else "")
        ax.text(
            x,
            y + 0.055,
            _short(self.ix.name(t)),
            fontsize=7,
            ha="center",
            va="center",
            color=INK,
            zorder=5,
            weight="bold" if marked else "normal",
        )
        ax.text(x, y - 0.09, sub, fontsize=5.5, ha="center", va="center", color=MUTED, zorder=5)

    def _port(self, ax: Axes, p: Port) -> None:
        from matplotlib.patches import FancyArrowPatch

        px, py = self.port(p)
        label = f"c{p.counter} ≥ {p.threshold}"
        if p.all_producers == 0:
            ax.plot(
                [px, px] if self.down else [px - 0.35, px],
                [py + 0.3, py] if self.down else [py, py],
                color=VIOLATION,
                lw=1.5,
                zorder=2,
                gid=self.gid("dangling", p.task, f"c{p.counter}"),
            )
            label += " (no producer)"
        elif p.threshold != p.all_producers:
            label += f" of {p.all_producers}"
        red = p.task in self.s.highlight
        for src in p.producers:
            start = self.exit(src)
            back = self.s.layer[src] >= self.s.layer[p.task]
            both = red and src in self.s.highlight
            ax.add_patch(
                FancyArrowPatch(
                    start,
                    (px, py),
                    arrowstyle="-|>",
                    mutation_scale=9,
                    connectionstyle=f"arc3,rad={-BACK_RAD if back else 0}",
                    color=VIOLATION if both else "#555555",
                    lw=1.6 if both else 0.8,
                    zorder=2,
                    gid=self.gid("edge", src, p.task, f"c{p.counter}"),
                )
            )
        short = p.threshold < p.all_producers and len(p.producers) > 0
        ax.text(
            px + (0.02 if self.down else -0.1),
            py + (0.04 if self.down else 0.015),
            label,
            fontsize=6.5,
            ha="left" if self.down else "right",
            va="bottom",
            rotation=30 if self.down and self.waits[p.task] > 1 else 0,
            zorder=4,
            color=VIOLATION if (red and short) or p.all_producers == 0 else INK,
            bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
        )

    def _queue(self, ax: Axes, a: int, b: int) -> None:
        from matplotlib.patches import FancyArrowPatch

        (ax_, ay), (bx, by) = self.at(a), self.at(b)
        # leave and enter on the side the arc bulges to (arc3 turns the chord left)
        if self.down:
            side = self.box_w / 2 if by > ay else -self.box_w / 2
            ends = (ax_ + side, ay), (bx + side, by)
        else:
            up = 1 if bx < ax_ else -1
            ends = (ax_, ay + up * self.box_h(a) / 2), (bx, by + up * self.box_h(b) / 2)
        ax.add_patch(
            FancyArrowPatch(
                *ends,
                arrowstyle="-|>",
                mutation_scale=9,
                connectionstyle=f"arc3,rad={BACK_RAD}",
                color=VIOLATION,
                ls="--",
                lw=1.2,
                zorder=2,
                gid=self.gid("queue", a, b),
            )
        )
        canvas.arc_label(ax, canvas.arc_middle(*ends, BACK_RAD), f"SM {self.ix.sms.get(a)} queue",
                         colour=VIOLATION, size=6, pad=0.1, zorder=4)

    def _legend(self, fig: Figure) -> None:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        ops = list(dict.fromkeys(self.ix.ops.get(t, "") for t in self.s.tasks))
        handles: list[Any] = [Patch(facecolor=op_colour(op), edgecolor=INK, label=op) for op in ops]
        handles.append(Line2D([], [], color="#555555", lw=0.8, marker=">", label="producer → waiting task"))
        if self.s.highlight:
            handles.append(Patch(facecolor="white", edgecolor=VIOLATION, lw=2, label=self.s.marked_as))
        legend = fig.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0.0, 0.0),
            fontsize=7,
            ncol=min(6, len(handles)),
            frameon=False,
        )
        legend.set_gid(self.gid("legend"))


def draw_graph(scene: GraphScene, ix: ProgramIndex, prefix: str = "") -> Figure:
    """Draw a laid-out program graph (see :func:`amkspec.viz.layout.graph_scene`)."""
    with canvas.style():
        return _Graph(scene, ix, prefix).draw()
