"""The witness timeline: lanes of task bars in witness order, counters underneath, the
violation on top (spec §2.2 execution model, §3 obligations).

x is the position of an event in the witness (the execution model is an
interleaving: order matters, durations do not). A task is a bar from its
``start`` to its ``end`` event; a task still running when the witness stops is
hatched to the right edge. Under the lanes each counter steps through its
values, with the thresholds the drawn tasks wait for. On top, by witness kind:
the read and the unfinished write that race, the two overlapping writers, the
clobbering write, the blocked waits of a stuck state (with the value each waits
for) or the edges of a cycle. Element ids come from :func:`amkspec.viz.scene.gid`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from amkspec.ir import MegakernelProgram
from amkspec.text import escape_line
from amkspec.viz import canvas
from amkspec.viz.palette import BLOCKED, GRID, INK, MUTED, VIOLATION, VIOLATION_FILL, op_colour
from amkspec.viz.program import ProgramIndex, index_program
from amkspec.viz.scene import VIOLATING_ROLES, Bar, CounterTrack, Ghost, TimelineScene, gid, timeline_scene

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

UNIT_IN = 0.42
"""Inches per witness event."""
LANE_IN = 0.42
COUNTER_IN = 0.55
CHAR_IN = 0.05
"""Approximate width of one character of the 7 pt label font, for sizing boxes."""
BAR_H = 0.64
WIDE_EVENTS = 12
"""Above this many events, bars in per-task lanes repeat the task's name (the lane label is far away)."""
RUN_TAIL = 1.4
"""How far (in events) a task still running when the witness stops is drawn past the last event."""
BRACKET_ROOM = 2.4
"""Room (in events) beside blocked tasks for the brackets and labels of the arrows between them."""
MAX_GHOST_LINKS = 12
"""Up to this many blocked tasks, arrows show which holds back which; beyond, only the reasons."""
MAX_GHOST_COLUMNS = 8
"""Up to this many blocked (or cyclic) tasks each get their own column."""
BRACKET_LEAN = 0.14
"""How far from a lane's middle a bracket between stacked tasks leaves and arrives (in lanes)."""


def timeline_figure(prog: MegakernelProgram, witness: Mapping[str, Any], prefix: str = "") -> Figure:
    """Draw witness ``witness`` (its documented JSON form) of ``prog``; element ids start with
    ``prefix`` (so several pictures can share one HTML page)."""
    ix = index_program(prog)
    names = {b.id: escape_line(b.name) for b in prog.buffers if type(b.id) is int and isinstance(b.name, str)}
    return draw_timeline(timeline_scene(ix, witness, names), ix, prefix)


class _Timeline:
    """Draws one :class:`TimelineScene`; positions of bars and ghosts are kept for the overlay."""

    def __init__(self, scene: TimelineScene, ix: ProgramIndex, prefix: str) -> None:
        self.s, self.ix, self.prefix = scene, ix, prefix
        self.n = len(scene.events)
        self.run_end = self.n - 1 + RUN_TAIL if self.n else 0.0
        self.bars = {b.task: b for b in scene.bars}
        self.ghost_lane = {g.task: g.lane for g in scene.ghosts}
        self.ghost_at = self._place_ghosts()
        self.content_right = max([self.run_end, *(x + w for x, w in self.ghost_at.values())])
        self.caption = self._caption_text()
        margin = (len(self.caption) * CHAR_IN + 0.4) / UNIT_IN if self.caption else 0.0
        brackets = BRACKET_ROOM if scene.ghosts else 0.0
        self.xlim = (-0.7, self.content_right + 0.4 + max(margin, brackets))
        self.patches: dict[int, Any] = {}

    def gid(self, *parts: object) -> str:
        return self.prefix + gid(*parts)

    def _place_ghosts(self) -> dict[int, tuple[float, float]]:
        """x and width of each ghost after the last event: side by side per lane, except that a
        few ghosts sharing an SM lane each get their own column (so arrows between them stay visible)."""
        lanes = [g.lane for g in self.s.ghosts]
        shared = len(lanes) <= MAX_GHOST_COLUMNS and len(set(lanes)) < len(lanes)
        cursor: dict[int, float] = {}
        out = {}
        for g in self.s.ghosts:
            key = -1 if shared else g.lane
            x = cursor.get(key, self.run_end + 0.35 if self.n else BRACKET_ROOM)
            chars = max(len(self.s.names.get(g.task, "")), len("; ".join(g.why)))
            width = (chars * CHAR_IN + 0.25) / UNIT_IN
            out[g.task] = (x, width)
            cursor[key] = x + width + 1.5
        column = {x for x, _ in out.values()}
        if self.s.cycle and len(column) == 1:  # one column: one right edge, so the loop's sides are straight
            widest = max(w for _, w in out.values())
            out = {t: (x, widest) for t, (x, _) in out.items()}
        return out

    def _caption_text(self) -> str:
        """One sentence saying what goes wrong, drawn in red next to the violation."""
        s, roles = self.s, self.s.roles
        buf = s.buffers.get("buffer", "the buffer")
        name = s.names.get
        if s.kind in ("read-race", "kv-race") and {"reader", "writer"} <= roles.keys():
            reader, writer = name(roles["reader"]), name(roles["writer"])
            return f"{reader} reads {buf} while {writer} has not finished writing it"
        if s.kind == "unwritten-read" and "reader" in roles:
            return f"{name(roles['reader'])} reads {buf}, which no task writes"
        if s.kind == "write-race" and {"first", "second"} <= roles.keys():
            return f"{name(roles['first'])} and {name(roles['second'])} both write {buf} at once"
        if s.kind == "page-clobber" and {"clobberer", "reader"} <= roles.keys():
            other = s.buffers.get("other", "another buffer")
            clobberer, reader = name(roles["clobberer"]), name(roles["reader"])
            return f"{clobberer} overwrites the page of {buf} with {other} before {reader} reads {buf}"
        return ""

    def _long_ticks(self) -> bool:
        """Step numbers too wide to sit side by side are turned."""
        return bool(self.s.steps) and len(str(self.s.steps[-1])) > 3

    def axes_in(self) -> float:
        """Width of the lanes: exactly :data:`UNIT_IN` per x unit, so sizes computed in inches hold."""
        return (self.xlim[1] - self.xlim[0]) * UNIT_IN

    def width_in(self) -> float:
        return max(6.5, (self.xlim[1] - self.xlim[0]) * UNIT_IN)

    def draw(self) -> Figure:
        s = self.s
        title_lines = textwrap.wrap(s.title, int(self.width_in() / 0.075)) or [""]
        note_lines = textwrap.wrap(s.note, int(self.width_in() / 0.06)) if s.note else []
        ticks_in = (0.45 + 0.3 * self._long_ticks()) if self.n else 0.1
        head_in = 0.15 + 0.2 * len(title_lines) + 0.17 * len(note_lines) + ticks_in
        main_in = max(1, len(s.lanes)) * LANE_IN + 0.1
        counters_in = len(s.counters) * COUNTER_IN
        foot_in = 0.45
        total = head_in + main_in + (counters_in + 0.15 if counters_in else 0) + foot_in
        fig = canvas.new_figure(self.width_in(), total)
        top = 1 - head_in / total
        canvas.heading(fig, title_lines, 0.1, total, self.gid("title"))
        if note_lines:
            canvas.heading(fig, note_lines, 0.15 + 0.2 * len(title_lines), total, self.gid("neighbourhood"),
                           note=True)
        span = self.axes_in() / self.width_in()
        ax = fig.add_axes((0.0, top - main_in / total, span, main_in / total))
        self._lanes(ax)
        if s.counters:
            bottom = top - (main_in + 0.15 + counters_in) / total
            cax = fig.add_axes((0.0, bottom, span, counters_in / total))
            self._counters(cax)
        self._legend(fig)
        return fig

    # -- lanes ------------------------------------------------------------------------------------

    def _lanes(self, ax: Axes) -> None:
        s = self.s
        ax.set_xlim(*self.xlim)
        ax.set_ylim(len(s.lanes) - 0.5, -0.5)
        ax.set_yticks(range(len(s.lanes)), [lane.label for lane in s.lanes], fontsize=8)
        ax.xaxis.tick_top()
        ax.set_xticks(range(self.n), [str(n) for n in s.steps], fontsize=7, rotation=60 * self._long_ticks())
        ax.tick_params(axis="both", length=0)
        if self.n:
            ax.set_xlabel("witness step (event order)", fontsize=7.5, color=MUTED, loc="left")
            ax.xaxis.set_label_position("top")
        for side in ("right", "top", "bottom"):
            ax.spines[side].set_visible(False)
        for x in range(self.n):
            ax.axvline(x, color=GRID, lw=0.6, zorder=0)
        for n in range(1, self.n):
            if s.steps[n] - s.steps[n - 1] > 1:
                ax.axvline(n - 0.5, color=MUTED, lw=1, ls=(0, (1, 2)), zorder=1, gid=self.gid("elided", n))
        for b in s.bars:
            self._bar(ax, b)
        for g in s.ghosts:
            self._ghost(ax, g)
        self._violation(ax)

    def _bar(self, ax: Axes, b: Bar) -> None:
        from matplotlib.patches import Rectangle

        end = self.run_end if b.end is None else b.end
        width = max(end - b.start, 0.35)
        rect = Rectangle(
            (b.start, b.lane - BAR_H / 2),
            width,
            BAR_H,
            facecolor=op_colour(self.ix.ops.get(b.task, "")),
            edgecolor=INK,
            lw=0.8,
            hatch="////" if b.end is None else None,
            zorder=3,
            gid=self.gid("task", b.task),
        )
        ax.add_patch(rect)
        self.patches[b.task] = rect
        if self.s.lanes[b.lane].task is not None and self.n <= WIDE_EVENTS:
            return  # the lane's label names the task, close enough to read
        text = ax.text(
            b.start + 0.08,
            b.lane,
            self.s.names[b.task],
            fontsize=7,
            va="center",
            ha="left",
            color=INK,
            zorder=4,
            bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
        )
        text.set_clip_path(
            Rectangle((b.start, b.lane - BAR_H / 2), self._room(b), BAR_H, transform=ax.transData)
        )

    def _room(self, b: Bar) -> float:
        """How far a bar's label may run: to the next bar (or blocked task) in the lane."""
        later: list[float] = [o.start for o in self.s.bars if o.lane == b.lane and o.start > b.start]
        later += [x for t, (x, _) in self.ghost_at.items() if self._lane_of(t) == b.lane]
        return min(later, default=self.content_right) - b.start - 0.05

    def _ghost(self, ax: Axes, g: Ghost) -> None:
        from matplotlib.patches import FancyBboxPatch

        x, w = self.ghost_at[g.task]
        colour = VIOLATION if g.kind == "cycle" else BLOCKED
        box = FancyBboxPatch(
            (x, g.lane - BAR_H / 2),
            w,
            BAR_H,
            boxstyle="round,pad=0,rounding_size=0.08",
            facecolor="white",
            edgecolor=colour,
            lw=1.6,
            ls="--",
            zorder=3,
            gid=self.gid(g.kind, g.task),
        )
        ax.add_patch(box)
        self.patches[g.task] = box
        ax.text(
            x + 0.1,
            g.lane - 0.12,
            self.s.names.get(g.task, str(g.task)),
            fontsize=7,
            weight="bold",
            va="center",
            ha="left",
            color=INK,
            zorder=4,
            gid=self.gid("task", g.task),
        )
        ax.text(
            x + 0.1,
            g.lane + 0.15,
            "; ".join(g.why),
            fontsize=6.5,
            va="center",
            ha="left",
            color=colour,
            zorder=4,
            gid=self.gid(g.kind, g.task, "why"),
        )

    # -- the violation ----------------------------------------------------------------------------

    def _violation(self, ax: Axes) -> None:
        s = self.s
        roles = s.roles
        for role in VIOLATING_ROLES.get(s.kind, ()):
            if role in roles and roles[role] in s.names:
                self._role_patch(ax, roles[role], role)
        mark: tuple[float, float] | None = None
        if s.kind in ("read-race", "kv-race") and {"reader", "writer"} <= roles.keys():
            mark = self._read_arrow(ax, roles["reader"], roles["writer"])
        elif s.kind == "unwritten-read" and "reader" in roles:
            x, y = self._x_of(roles["reader"]), self._lane_of(roles["reader"])
            ax.plot([x], [y], marker="o", color=VIOLATION, ms=8, zorder=6, gid=self.gid("violation"))
            mark = (x, y)
        elif s.kind == "write-race" and {"first", "second"} <= roles.keys():
            mark = self._overlap(ax, roles["first"], roles["second"])
        elif s.kind == "page-clobber" and {"clobberer", "reader"} <= roles.keys():
            mark = self._clobber_arrow(ax, roles["clobberer"], roles["reader"])
        if mark is not None and self.caption:
            ax.annotate(
                self.caption,
                xy=mark,
                xytext=(self.content_right + 0.5, mark[1]),
                fontsize=7.5,
                color=VIOLATION,
                weight="bold",
                ha="left",
                va="center",
                zorder=7,
                gid=self.gid("violation", "text"),
                arrowprops={"arrowstyle": "-", "color": VIOLATION, "lw": 0.8, "ls": ":"},
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": VIOLATION, "lw": 0.8},
            )
        if not s.cycle and len(s.ghosts) <= MAX_GHOST_LINKS:  # beyond, arrows would hide the reasons
            for g in s.ghosts:
                self._blocking_links(ax, g)
        for e in s.cycle:  # a cycle: only its edges, so it reads as one loop
            if e.src in self.patches and e.dst in self.patches:
                self._link(ax, e.src, e.dst, e.via, self.gid("cycle-edge", e.src, e.dst), VIOLATION, 0.3)

    def _blocking_links(self, ax: Axes, g: Ghost) -> None:
        """Inside a stuck state: which blocked task holds back which (a wait or an SM queue)."""
        if g.kind != "blocked":
            return
        pred = self.ix.queue_prev.get(g.task)
        if pred is not None and pred in self.ghost_at and any(w.startswith("queued") for w in g.why):
            self._link(ax, pred, g.task, "SM queue", self.gid("queue", pred, g.task), BLOCKED)
        for c, _ in self.ix.waits.get(g.task, ()):
            for p in self.ix.producers.get(c, ()):
                if p in self.ghost_at and p != g.task:
                    self._link(ax, p, g.task, f"c{c}", self.gid("wait", p, g.task), BLOCKED)

    def _x_of(self, task: int) -> float:
        bar = self.bars.get(task)
        if bar is not None:
            return bar.start
        x, w = self.ghost_at.get(task, (self.run_end, 0.0))
        return x + w / 2

    def _lane_of(self, task: int) -> int:
        bar = self.bars.get(task)
        if bar is not None:
            return bar.lane
        if task in self.ghost_lane:
            return self.ghost_lane[task]
        sm = self.ix.sms.get(task)
        return next(
            n
            for n, lane in enumerate(self.s.lanes)
            if lane.task == task or (sm is not None and lane.sm == sm)
        )

    def _span(self, task: int) -> tuple[float, float]:
        """x extent of a task's bar; a task that has not started gets a short box at the end."""
        bar = self.bars.get(task)
        if bar is None:
            return self.run_end - 0.6, self.run_end
        return bar.start, self.run_end if bar.end is None else bar.end

    def _role_patch(self, ax: Axes, task: int, role: str) -> None:
        """The red outline of a violating task, carrying the role's id."""
        from matplotlib.patches import Rectangle

        x0, x1 = self._span(task)
        lane = self._lane_of(task)
        unstarted = task not in self.bars
        ax.add_patch(
            Rectangle(
                (x0, lane - BAR_H / 2),
                max(x1 - x0, 0.35),
                BAR_H,
                fill=False,
                edgecolor=VIOLATION,
                lw=2.4,
                ls="--" if unstarted else "-",
                zorder=5,
                gid=self.gid("role", role),
            )
        )
        if unstarted:
            name = self.s.names.get(task, str(task))
            ax.text(
                x0 - 0.08,
                lane,
                f"{name} not started",
                fontsize=6.5,
                ha="right",
                va="center",
                color=VIOLATION,
                gid=self.gid("task", task),
            )

    def _violation_arrow(self, ax: Axes, a: tuple[float, float], b: tuple[float, float], style: str,
                         scale: float) -> None:
        """The red arrow from ``a`` to ``b`` that shows the violation."""
        from matplotlib.patches import FancyArrowPatch

        ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=scale, color=VIOLATION, lw=2,
                                     zorder=6, gid=self.gid("violation")))

    def _read_arrow(self, ax: Axes, reader: int, writer: int) -> tuple[float, float]:
        """The reader's start, joined to the writer it races with."""
        x = self._x_of(reader)
        y0, y1 = self._lane_of(reader), self._lane_of(writer)
        dy = BAR_H / 2 if y1 > y0 else -BAR_H / 2
        self._violation_arrow(ax, (x, y0 + dy), (x, y1 - dy), "<|-|>", 10)
        return x, (y0 + y1) / 2

    def _clobber_arrow(self, ax: Axes, clobberer: int, reader: int) -> tuple[float, float]:
        """From the clobbering write to the read that sees its data."""
        a = (self._span(clobberer)[1], float(self._lane_of(clobberer)))
        b = (self._x_of(reader), float(self._lane_of(reader)))
        self._violation_arrow(ax, a, b, "-|>", 12)
        return (a[0] + b[0]) / 2, (a[1] + b[1]) / 2

    def _overlap(self, ax: Axes, first: int, second: int) -> tuple[float, float] | None:
        """The stretch of witness where both writers run, shaded across their lanes."""
        from matplotlib.patches import Rectangle

        if first not in self.bars or second not in self.bars:
            return None
        (a0, a1), (b0, b1) = self._span(first), self._span(second)
        x0, x1 = max(a0, b0), min(a1, b1)
        lanes = [self.bars[first].lane, self.bars[second].lane]
        y0, y1 = min(lanes) - BAR_H / 2 - 0.1, max(lanes) + BAR_H / 2 + 0.1
        ax.add_patch(
            Rectangle(
                (x0, y0),
                max(x1 - x0, 0.2),
                y1 - y0,
                facecolor=VIOLATION_FILL,
                alpha=0.5,
                edgecolor=VIOLATION,
                lw=1.2,
                zorder=2,
                gid=self.gid("violation"),
            )
        )
        return max(x1, x0 + 0.2), (y0 + y1) / 2

    def _stacked(self, src: int, dst: int) -> bool:
        """Two ghosts in different lanes, one above the other."""
        if src not in self.ghost_at or dst not in self.ghost_at or self._lane_of(src) == self._lane_of(dst):
            return False
        (a, wa), (b, wb) = self.ghost_at[src], self.ghost_at[dst]
        return a < b + wb and b < a + wa

    def _bracket(self, ax: Axes, src: int, dst: int, via: str, element_id: str, colour: str) -> None:
        """Between stacked ghosts: a bracket on the right (going down) or the left (going up)."""
        from matplotlib.patches import FancyArrowPatch

        down = self._lane_of(src) < self._lane_of(dst)
        (a, wa), (b, wb) = self.ghost_at[src], self.ghost_at[dst]
        xa, xb = (a + wa, b + wb) if down else (a, b)
        # leave from the lower half and arrive in the upper half (going down; the reverse going up),
        # so a task a path enters and leaves shows both arrows
        lean = BRACKET_LEAN if down else -BRACKET_LEAN
        ya, yb = self._lane_of(src) + lean, self._lane_of(dst) - lean
        angle = 0 if down else 180
        ax.add_patch(
            FancyArrowPatch(
                (xa, ya),
                (xb, yb),
                arrowstyle="-|>",
                mutation_scale=12,
                connectionstyle=f"arc,angleA={angle},angleB={angle},armA=22,armB=22,rad=4",
                color=colour,
                lw=1.6,
                zorder=6,
                gid=element_id,
            )
        )
        arm = (22 / 72 + 0.04) / UNIT_IN
        edge = max(xa, xb) + arm if down else min(xa, xb) - arm
        ax.text(  # on the bracket's upright, beside it
            edge,
            (ya + yb) / 2,
            via,
            fontsize=6.5,
            color=colour,
            ha="left" if down else "right",
            va="center",
            zorder=7,
            gid=f"{element_id}-label",
        )

    def _link(
        self, ax: Axes, src: int, dst: int, via: str, element_id: str, colour: str, bend: float = 0.0
    ) -> None:
        """An arrow between two drawn tasks (clipped at their boxes), labelled ``via``; bent by
        ``bend`` between lanes, arched over one lane."""
        from matplotlib.patches import FancyArrowPatch

        if self._stacked(src, dst):
            self._bracket(ax, src, dst, via, element_id, colour)
            return
        a = (self._x_of(src), float(self._lane_of(src)))
        b = (self._x_of(dst), float(self._lane_of(dst)))
        # over one lane, arcs bulge downwards (into the chart), deeper when they run right to left
        rad = (0.35 if a[0] < b[0] else -0.55) if a[1] == b[1] else bend
        ax.add_patch(
            FancyArrowPatch(
                a,
                b,
                arrowstyle="-|>",
                mutation_scale=12,
                connectionstyle=f"arc3,rad={rad}",
                patchA=self.patches.get(src),
                patchB=self.patches.get(dst),
                color=colour,
                lw=1.6,
                zorder=6,
                gid=element_id,
            )
        )
        # the middle of the arc, in inches (y up), mapped back to data coordinates
        sx, sy = UNIT_IN, LANE_IN
        mx, my = canvas.arc_middle((a[0] * sx, -a[1] * sy), (b[0] * sx, -b[1] * sy), rad)
        canvas.arc_label(ax, (mx / sx, -my / sy), via, colour=colour, size=6.5, pad=0.15, zorder=7)

    # -- counters ---------------------------------------------------------------------------------

    def _counters(self, ax: Axes) -> None:
        s = self.s
        k = len(s.counters)
        ax.set_xlim(*self.xlim)
        ax.set_ylim(0, k)
        ax.set_xticks([])
        ax.set_yticks(
            [k - r - 0.5 for r in range(k)],
            [self.ix.counter_name(t.counter) for t in s.counters],
            fontsize=7.5,
        )
        ax.tick_params(axis="both", length=0)
        for side in ("right", "top", "bottom"):
            ax.spines[side].set_visible(False)
        for x in range(self.n):
            ax.axvline(x, color=GRID, lw=0.6, zorder=0)
        for r, track in enumerate(s.counters):
            self._track(ax, k - r - 1, track)

    def _track(self, ax: Axes, base: float, t: CounterTrack) -> None:
        top = max([t.full, t.initial, *t.values, *(th.value for th in t.thresholds), 1])

        def y(v: int) -> float:
            return base + 0.12 + 0.7 * v / top

        right = self.content_right
        ax.axhline(base, color=GRID, lw=0.5)
        xs = [self.xlim[0], *range(len(t.values)), right]
        vs = [t.initial, *t.values, t.values[-1] if t.values else t.initial]
        ax.step(
            xs,
            [y(v) for v in vs],
            where="post",
            color=INK,
            lw=1.6,
            zorder=3,
            gid=self.gid("counter", t.counter),
        )
        ax.text(
            self.xlim[0] + 0.05,
            y(t.initial) + 0.04,
            str(t.initial),
            fontsize=7,
            va="bottom",
            color=INK,
            weight="bold",
        )
        prev = t.initial
        for x, v in enumerate(t.values):
            if v != prev:
                ax.text(
                    x + 0.06,
                    y(v) + 0.04,
                    str(v),
                    fontsize=7,
                    va="bottom",
                    ha="left",
                    color=INK,
                    weight="bold",
                )
            prev = v
        labels = []
        for th in t.thresholds:
            who = ", ".join(self.s.names.get(w, str(w)) for w in th.waiters[:2])
            who += f" +{len(th.waiters) - 2}" if len(th.waiters) > 2 else ""
            bad = th.value < t.full and any(self.s.role_of(w) for w in th.waiters)
            stuck = th.value > t.full or any(w in self.ghost_at for w in th.waiters)
            colour = VIOLATION if bad else BLOCKED if stuck else MUTED
            ax.plot(
                [self.xlim[0], right],
                [y(th.value)] * 2,
                color=colour,
                lw=1,
                ls="--",
                zorder=2,
                gid=self.gid("threshold", t.counter, th.value),
            )
            note = " (all producers)" if th.value == t.full else f" (of {t.full})"
            labels.append((th.value, f"{who} waits ≥ {th.value}{note}", colour))
        if t.full not in {th.value for th in t.thresholds}:
            ax.plot([self.xlim[0], right], [y(t.full)] * 2, color=MUTED, lw=0.8, ls=":", zorder=2)
            labels.append((t.full, f"{t.full} = all producers done", MUTED))
        for value, text, colour in labels:
            ax.text(right + 0.15, y(value), text, fontsize=6.5, va="center", ha="left", color=colour)

    # -- legend -----------------------------------------------------------------------------------

    def _legend(self, fig: Figure) -> None:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        s = self.s
        ops = list(dict.fromkeys(self.ix.ops.get(b.task, "") for b in s.bars))
        handles: list[Any] = [Patch(facecolor=op_colour(op), edgecolor=INK, label=op) for op in ops]
        if any(b.end is None for b in s.bars):
            handles.append(
                Patch(facecolor="white", edgecolor=INK, hatch="////", label="still running at the end")
            )
        if any(s.role_of(t) for t in s.names) or any(g.kind == "cycle" for g in s.ghosts):
            handles.append(Patch(facecolor="white", edgecolor=VIOLATION, lw=2, label="violating task"))
        if s.cycle:
            handles.append(Line2D([], [], color=VIOLATION, lw=1.6, marker=">", label="wait cycle: waits for"))
        if any(g.kind == "blocked" for g in s.ghosts):
            handles.append(
                Patch(facecolor="white", edgecolor=BLOCKED, ls="--", label="blocked: never starts")
            )
        if s.counters:
            handles += [
                Line2D([], [], color=INK, lw=1.6, label="counter value"),
                Line2D([], [], color=MUTED, ls="--", label="wait threshold"),
            ]
        legend = fig.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0.0, 0.0),
            ncol=min(6, len(handles)),
            fontsize=7,
            frameon=False,
        )
        legend.set_gid(self.prefix + gid("legend"))


def draw_timeline(scene: TimelineScene, ix: ProgramIndex, prefix: str = "") -> Figure:
    """Draw a decided scene (see :func:`amkspec.viz.scene.timeline_scene`)."""
    with canvas.style():
        return _Timeline(scene, ix, prefix).draw()
