"""Benchmark of the pictures (issue 15): render times of witness timelines and program graphs.

Run: ``python3 benchmarks/viz.py [--repeat N]``.

* ``timeline (gallery)``: the partial-join example's witness timeline, figure + SVG text;
* ``timeline 48 tasks``: the witness of ``layered(48, "race")`` found by ``explain`` (84 events,
  one lane per SM), figure + SVG and PNG;
* ``graph decoder_layer``: ``examples/decoder_layer.json``'s program graph (34 tasks), figure + SVG;
* ``neighbourhood 100k``: ``layered(100_000, "race")`` with a replay-checked witness of 199,992
  events, drawn as its neighbourhood (index, selection, figure, SVG). Building the program and the
  witness is not timed.

Prints the median wall-clock seconds of each (matplotlib runs in this process).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_wall

from amkspec.evidence.replay import check_witness
from amkspec.ir import load
from amkspec.programs.gallery import EXAMPLES, layered, race_witness
from amkspec.smt.explain import explain
from amkspec.viz import canvas
from amkspec.viz.graph import graph_figure
from amkspec.viz.timeline import timeline_figure

ROOT = Path(__file__).resolve().parent.parent


def first_witness(prog: object) -> dict:  # type: ignore[type-arg]
    result = explain(prog).to_dict(prog)  # type: ignore[arg-type]
    return next(f["witness"] for f in result["findings"] if f["witness"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    gallery = EXAMPLES["partial-join read race"]()
    gallery_w = first_witness(gallery)
    mid = layered(48, "race")
    mid_w = first_witness(mid)
    decoder = load(ROOT / "examples" / "decoder_layer.json")
    big, big_w = race_witness(100_000)
    check_witness(big, big_w)
    cases: dict[str, Callable[[], object]] = {
        "timeline (gallery)": lambda: canvas.svg_text(timeline_figure(gallery, gallery_w)),
        "timeline 48 tasks": lambda: (
            canvas.svg_text(fig := timeline_figure(mid, mid_w)),
            canvas.png_bytes(fig),
        ),
        "graph decoder_layer": lambda: canvas.svg_text(graph_figure(decoder)),
        "neighbourhood 100k": lambda: canvas.svg_text(timeline_figure(big, big_w)),
    }
    for name, fn in cases.items():
        print(f"{name:<22} {median_wall(fn, args.repeat):8.2f} s (median of {args.repeat})")


if __name__ == "__main__":
    main()
