"""Matplotlib, imported lazily, and the one way pictures are written: SVG text or PNG bytes.

Figures are plain :class:`matplotlib.figure.Figure` objects drawn through the
Agg and SVG canvases (no pyplot, no global backend state), so rendering works
headless and in threads. SVG keeps text as text (``svg.fonttype = none``) so a
reader can search it, and every artist given a ``gid`` becomes an element with
that id. The program's names reach the figures escaped (:func:`amkspec.text.escape_line`,
in :func:`amkspec.viz.program.index_program`), and before a figure is written every
text in it is escaped too: XML 1.0 forbids control characters, and no font has their
glyphs. Tick labels are made at drawing time, so the SVG text gets a last pass that
escapes any character XML 1.0 forbids. Matplotlib's warnings about glyphs a font lacks
are not printed.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amkspec.ir import AmkspecError
from amkspec.ir.atomic import write_atomic
from amkspec.text import escape_line, escape_lines

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""The characters XML 1.0 does not allow in a document."""

FONT = "DejaVu Sans"
DPI = 110

RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "amkspec",
    "font.family": "sans-serif",
    "font.sans-serif": [FONT, "Arial", "Helvetica"],
    "font.size": 8,
    "text.parse_math": False,
}
"""``text.parse_math`` off: a label such as ``$\\frac$`` is text, not a (broken) formula."""


class VizUnavailable(AmkspecError, ImportError):
    """Pictures need matplotlib: ``pip install amkspec[viz]``."""


def mpl() -> Any:
    """The ``matplotlib`` module, or :class:`VizUnavailable` with the install hint."""
    try:
        import matplotlib
    except ImportError as exc:
        raise VizUnavailable(f"pictures need the viz extra (pip install 'amkspec[viz]'): {exc}") from exc
    return matplotlib


def style() -> Any:
    """A context in which figures are built and saved with amkspec's fonts and SVG settings."""
    return mpl().rc_context(RC)


@contextmanager
def _writing(fig: Figure) -> Iterator[None]:
    """Save ``fig`` within this: its texts escaped, amkspec's style, no missing-glyph warnings."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_text(escape_lines(text.get_text()))
        text.set_parse_math(False)
    with style(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        yield


def new_figure(width_in: float, height_in: float) -> Figure:
    """A figure of the given size in inches, not attached to pyplot."""
    mpl()
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), dpi=DPI)


def svg_text(fig: Figure) -> str:
    """The figure as a standalone SVG document."""
    buf = io.StringIO()
    with _writing(fig):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return XML_FORBIDDEN.sub(lambda m: escape_line(m.group()), buf.getvalue())


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG."""
    buf = io.BytesIO()
    with _writing(fig):
        fig.savefig(buf, format="png", bbox_inches="tight", dpi=DPI)
    return buf.getvalue()


def inline_svg(fig: Figure) -> str:
    """The ``<svg>`` element alone, for embedding in HTML (no XML prolog or doctype)."""
    text = svg_text(fig)
    return text[text.index("<svg") :]


def save(fig: Figure, path: str | Path, fmt: str | None = None) -> None:
    """Write ``fig`` to ``path`` as ``fmt`` (``"svg"`` or ``"png"``; by default from the suffix)."""
    path = Path(path)
    if (fmt or path.suffix.lower().lstrip(".")) == "svg":
        write_atomic(path, svg_text(fig))
    else:
        write_atomic(path, png_bytes(fig))


def heading(fig: Figure, lines: list[str], top_in: float, total_in: float, gid: str, *,
            note: bool = False) -> None:
    """A block of text at the figure's left edge, ``top_in`` inches below its top: the bold
    title, or (``note``) the italic line that says what a picture leaves out."""
    from amkspec.viz.palette import INK, MUTED

    fig.text(0.0, 1 - top_in / total_in, "\n".join(lines), va="top", ha="left",
             fontsize=7.5 if note else 10, style="italic" if note else "normal",
             weight="normal" if note else "bold", color=MUTED if note else INK, gid=gid)


def arc_middle(a: tuple[float, float], b: tuple[float, float], rad: float) -> tuple[float, float]:
    """The middle of matplotlib's ``arc3`` connection from ``a`` to ``b`` (it bends by ``rad`` times
    the chord, turned left), in the coordinates of ``a`` and ``b``."""
    return (a[0] + b[0]) / 2 + rad / 2 * (b[1] - a[1]), (a[1] + b[1]) / 2 - rad / 2 * (b[0] - a[0])


def arc_label(ax: Axes, at: tuple[float, float], text: str, *, colour: str, size: float, pad: float,
              zorder: int) -> None:
    """``text`` centred at ``at`` on a white box: the label of an arc drawn below it."""
    ax.text(*at, text, fontsize=size, color=colour, ha="center", va="center", zorder=zorder,
            bbox={"boxstyle": f"round,pad={pad}", "facecolor": "white", "edgecolor": "none"})
