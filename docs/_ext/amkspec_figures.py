"""Sphinx directive ``amkspec-witness-figures``: an example's witness timeline and program graph,
drawn when the site is built.

Usage (MyST)::

    ```{amkspec-witness-figures} partial-join read race
    ```

The argument is a title of :data:`amkspec.programs.gallery.EXAMPLES`. The directive
runs :func:`amkspec.smt.explain.explain` on the example, replays the witness with
:func:`amkspec.evidence.replay.check_witness`, and inlines two SVG pictures from
:mod:`amkspec.viz` (the timeline of the first witnessed finding, and the program
graph with that finding's tasks outlined). HTML builders show them; others skip them.
"""

from __future__ import annotations

import re
from functools import cache
from html import escape
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive

from amkspec.evidence.replay import check_witness
from amkspec.ir import MegakernelProgram
from amkspec.programs.gallery import EXAMPLES
from amkspec.smt.explain import explain
from amkspec.viz import canvas
from amkspec.viz.graph import graph_figure
from amkspec.viz.timeline import timeline_figure


@cache
def witness_of(title: str) -> tuple[MegakernelProgram, dict[str, Any]]:
    """The example program and its first witnessed finding (replayed), in JSON form."""
    prog = EXAMPLES[title]()
    result = explain(prog).to_dict(prog)
    finding = next(f for f in result["findings"] if f["witness"])
    check_witness(prog, finding["witness"])
    return prog, finding


def figures_html(title: str) -> str:
    """Both pictures of one gallery example as HTML (inline SVG, ids prefixed by the example)."""
    prog, finding = witness_of(title)
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + "-"
    timeline = canvas.inline_svg(timeline_figure(prog, finding["witness"], slug))
    graph = canvas.inline_svg(graph_figure(prog, finding["tasks"], "", slug + "g-"))
    return (
        f'<figure class="amkspec-witness" id="{slug}timeline-figure">'
        f'<div style="overflow-x:auto">{timeline}</div>'
        f"<figcaption>Witness timeline of <em>{escape(title)}</em>: one lane per SM or task, events in "
        "witness order, counters underneath, the violation in red.</figcaption></figure>\n"
        f'<figure class="amkspec-witness" id="{slug}graph-figure"><div style="overflow-x:auto">{graph}</div>'
        f"<figcaption>Program graph, the finding's tasks outlined in red; each wait is labelled "
        "<code>counter ≥ threshold</code>.</figcaption></figure>"
    )


class WitnessFigures(Directive):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = False

    def run(self) -> list[nodes.Node]:
        title = self.arguments[0]
        if title not in EXAMPLES:
            raise self.error(f"no example titled {title!r}; known: {', '.join(EXAMPLES)}")
        return [nodes.raw("", figures_html(title), format="html")]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("amkspec-witness-figures", WitnessFigures)
    return {"parallel_read_safe": True, "version": "1"}
