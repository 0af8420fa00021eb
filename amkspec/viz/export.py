"""What ``amkspec explain --svg/--png/--html`` and ``amkspec info --svg/--png --highlight`` write.

Kept here so the CLI modules only add their options. Each function writes the
files and returns one line per file written; a request that cannot be met (no
witness to draw, no such finding) raises :class:`NoPicture`, an
:class:`~amkspec.ir.AmkspecError` the CLI prints as one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from amkspec.ir import AmkspecError, MegakernelProgram
from amkspec.ir.atomic import refuse_overwrite, write_atomic
from amkspec.viz import canvas


class NoPicture(AmkspecError, ValueError):
    """The picture asked for does not exist (an accepted program has no witness to draw)."""


def pick_witness(explanation: Mapping[str, Any], finding: int | None) -> tuple[int, Mapping[str, Any]]:
    """The 1-based number and witness of finding ``finding``, or of the first witnessed finding."""
    findings = list(explanation.get("findings") or ())
    if finding is not None:
        if not 1 <= finding <= len(findings):
            raise NoPicture(f"there is no finding {finding}: the program has {len(findings)}")
        w = findings[finding - 1].get("witness")
        if not w:
            raise NoPicture(
                f"finding {finding} is {findings[finding - 1].get('status')}: it has no witness to draw "
                "(--html shows it, 'amkspec info FILE --svg OUT --highlight N' draws its tasks)"
            )
        return finding, w
    for n, f in enumerate(findings, 1):
        if f.get("witness"):
            return n, f["witness"]
    raise NoPicture(f"{explanation.get('verdict')}, with no witnessed finding: there is no timeline to draw")


def _targets(source: str, *paths: tuple[str | None, str]) -> list[tuple[str, str]]:
    """The requested (path, format) pairs; none may name the input file (written atomically)."""
    chosen = [(p, fmt) for p, fmt in paths if p]
    for p, _ in chosen:
        refuse_overwrite(p, [source])
    return chosen


def write_explain(
    prog: MegakernelProgram,
    explanation: Mapping[str, Any],
    source: str,
    *,
    svg: str | None = None,
    png: str | None = None,
    html: str | None = None,
    finding: int | None = None,
) -> list[str]:
    """Write the witness timeline (SVG/PNG) of one finding and/or the HTML report."""
    from amkspec.viz.report import report_html
    from amkspec.viz.timeline import timeline_figure

    lines = []
    targets = _targets(source, (svg, "svg"), (png, "png"), (html, "html"))
    if svg or png:
        n, w = pick_witness(explanation, finding)
        fig = timeline_figure(prog, w)
        for path, fmt in targets:
            if fmt != "html":
                canvas.save(fig, path, fmt)
                lines.append(f"{path}: timeline of finding {n} ({w.get('kind')})")
    if html:
        write_atomic(html, report_html(prog, explanation, source))
        lines.append(f"{html}: report of {len(explanation.get('findings') or ())} findings")
    return lines


def highlight_tasks(prog: MegakernelProgram, which: str) -> tuple[str, tuple[int, ...]]:
    """The tasks of one validator finding: ``which`` is its 1-based number among the errors (as
    ``validate`` and ``explain`` list them) or its code (the first error with that code)."""
    from amkspec.proofs import Severity, validate

    errors = [d for d in validate(prog).diagnostics if d.severity is Severity.ERROR]
    if re.fullmatch(r"[0-9]+", which):
        if len(which) > 9 or not 1 <= int(which) <= len(errors):
            raise NoPicture(f"there is no finding {which}: the program has {len(errors)} errors")
        chosen = [errors[int(which) - 1]]
    else:
        chosen = [e for e in errors if e.code.upper() == which.upper()][:1]
        if not chosen:
            shown = which if which.isprintable() else repr(which)
            raise NoPicture(
                f"no finding has code {shown}: the program's errors are "
                f"{', '.join(e.code for e in errors) or 'none'}"
            )
    d = chosen[0]
    return f"{d.code}: {d.message}", tuple(d.tasks)


def write_graph(
    prog: MegakernelProgram, source: str, *, svg: str | None, png: str | None, highlight: str | None,
    layer: int | None = None, around: int | None = None,
) -> list[str]:
    """Write the program graph, highlighting the tasks of one finding when asked; ``layer`` or
    ``around`` draws one decoder layer or one task's neighbourhood (:class:`~amkspec.viz.graph.Focus`)."""
    from amkspec.viz.graph import Focus, graph_figure

    title, tasks = f"{source}: program graph", tuple[int, ...]()
    if highlight is not None:
        what, tasks = highlight_tasks(prog, highlight)
        title = f"{source}: {what}"
    focus = Focus(layer, around) if layer is not None or around is not None else None
    fig = graph_figure(prog, tasks, title, focus=focus)
    lines = []
    for path, fmt in _targets(source, (svg, "svg"), (png, "png")):
        canvas.save(fig, path, fmt)
        lines.append(f"{path}: program graph of {len(prog.tasks)} tasks")
    return lines
