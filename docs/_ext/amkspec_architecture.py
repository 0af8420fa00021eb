"""Sphinx directive ``amkspec-layers``: the picture of the package floors of
:data:`amkspec.architecture.LAYERS`, drawn with matplotlib when the site is built.

Usage (MyST)::

    ```{amkspec-layers}
    ```

One band per floor, the lowest at the bottom; each package a box on its floor, its width growing
with the square root of its lines of Python. Imports only go down (``tests/test_architecture.py``).
HTML builders show the inline SVG; others skip it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive

from amkspec.architecture import LAYERS
from amkspec.viz import canvas
from amkspec.viz.palette import INK, MUTED

ROOT = Path(__file__).resolve().parents[2]
BAND_IN, WIDTH_IN, LABEL_IN = 0.42, 9.0, 1.7
LIGHT = ("#c6dbef", "#c7e9c0", "#fdd0a2", "#dadaeb", "#fde0ef")


def lines_of(package: str) -> int:
    """Lines of Python of a package (or module) of the repository."""
    path = ROOT.joinpath(*package.split("."))
    if package == "amkspec":
        files = [path / "__init__.py"]
    elif path.is_dir():
        files = list(path.rglob("*.py"))
    else:
        files = [path.with_suffix(".py")]
    return sum(len(f.read_text().splitlines()) for f in files)


def label(package: str) -> str:
    return "amkspec (API)" if package == "amkspec" else package.removeprefix("amkspec.")


def layers_figure() -> Any:
    """The floors as bands, lowest at the bottom; boxes share a floor's width by the square root of
    their lines (never narrower than their name)."""
    fig = canvas.new_figure(WIDTH_IN, BAND_IN * len(LAYERS) + 0.2)
    from matplotlib.patches import FancyBboxPatch

    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH_IN)
    ax.set_ylim(0, BAND_IN * len(LAYERS) + 0.2)
    ax.axis("off")
    for floor, layer in enumerate(LAYERS):
        y = 0.1 + floor * BAND_IN
        ax.text(0.05, y + BAND_IN / 2, f"{floor} {layer.name}", va="center", ha="left", fontsize=8,
                color=MUTED)
        labels = [label(p) for p in layer.packages]
        weights = [
            max(lines_of(p) ** 0.5, 3.0 * len(text)) for p, text in zip(layer.packages, labels, strict=True)
        ]
        x, room = LABEL_IN, WIDTH_IN - LABEL_IN - 0.05
        for text, weight in zip(labels, weights, strict=True):
            w = room * weight / sum(weights)
            ax.add_patch(FancyBboxPatch(
                (x + 0.03, y + 0.05), w - 0.06, BAND_IN - 0.1, boxstyle="round,pad=0,rounding_size=0.05",
                facecolor=LIGHT[floor % len(LIGHT)], edgecolor=INK, linewidth=0.6))
            ax.text(x + w / 2, y + BAND_IN / 2, text, va="center", ha="center", fontsize=7.5, color=INK)
            x += w
    return fig


class Layers(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        svg = canvas.inline_svg(layers_figure())
        html = (
            f'<figure class="amkspec-layers"><div style="overflow-x:auto">{svg}</div>'
            "<figcaption>The floors of the house, the lowest at the bottom: a package imports only "
            "from the floors below it.</figcaption></figure>"
        )
        return [nodes.raw("", html, format="html")]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("amkspec-layers", Layers)
    return {"parallel_read_safe": True, "version": "1"}
