"""What ``amkspec explain --svg/--png/--html`` and ``amkspec info --svg/--png --highlight`` write.

Kept here so the CLI modules only add their options. Each function writes the
files and returns one line per file written; a request that cannot be met (no
such finding) raises :class:`NoPicture`, an :class:`~amkspec.ir.AmkspecError` the
CLI prints as one line, before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from amkspec.ir import AmkspecError, MegakernelProgram
from amkspec.ir.atomic import refuse_overwrite, write_atomic
from amkspec.text import count, no_such_finding, tally
from amkspec.viz import canvas

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class NoPicture(AmkspecError, ValueError):
    """The picture asked for does not exist (there is no such finding)."""


def pick_witness(explanation: Mapping[str, Any], finding: int | None) -> tuple[int, Mapping[str, Any] | None]:
    """The 1-based number of finding ``finding`` (default: the first witnessed one, else the first
    one) and its witness, None when it has none; :class:`NoPicture` when there is no such finding."""
    findings = list(explanation.get("findings") or ())
    if finding is not None:
        if not 1 <= finding <= len(findings):
            raise NoPicture(no_such_finding(finding, f"the program has {tally(findings)}"))
        return finding, findings[finding - 1].get("witness") or None
    for n, f in enumerate(findings, 1):
        if f.get("witness"):
            return n, f["witness"]
    return 1, None


def _targets(source: str, *paths: tuple[str | None, str]) -> list[tuple[str, str]]:
    """The requested (path, format) pairs; none may name the input file (written atomically)."""
    chosen = [(p, fmt) for p, fmt in paths if p]
    for p, _ in chosen:
        refuse_overwrite(p, [source])
    return chosen


def _explain_picture(
    prog: MegakernelProgram, explanation: Mapping[str, Any], source: str, finding: int | None
) -> tuple[Figure, str]:
    """The picture ``explain --svg/--png`` draws and what it shows: the witness timeline of a
    witnessed finding; otherwise the program graph, the finding's tasks outlined (a rule-only
    finding) or none (an accepted program: every obligation proved, nothing to witness)."""
    from amkspec.viz.graph import graph_figure
    from amkspec.viz.timeline import timeline_figure

    findings = list(explanation.get("findings") or ())
    n, witness = pick_witness(explanation, finding)
    if witness is not None:
        return timeline_figure(prog, witness), f"timeline of finding {n} ({witness.get('kind')})"
    chosen = findings[n - 1] if findings else {}
    if chosen.get("status") == "proved" or not findings:
        what = f"{explanation.get('verdict')}: {tally(findings)}, no witness to draw"
        return graph_figure(prog, (), f"{source}: {what}"), f"program graph ({what})"
    tasks = tuple(t for t in chosen.get("tasks") or () if type(t) is int)
    what = f"finding {n} ({chosen.get('status')} {chosen.get('code') or chosen.get('kind')}), no witness"
    return graph_figure(prog, tasks, f"{source}: {what}: its tasks"), f"program graph of {what}"


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
    """Write the picture (SVG/PNG) of one finding and/or the HTML report; a finding that does not
    exist fails (:class:`NoPicture`) before anything is written."""
    from amkspec.viz.report import report_html

    lines = []
    targets = _targets(source, (svg, "svg"), (png, "png"), (html, "html"))
    picture = _explain_picture(prog, explanation, source, finding) if svg or png else None
    if html:
        write_atomic(html, report_html(prog, explanation, source))
        lines.append(f"{html}: report of {tally(list(explanation.get('findings') or ()))}")
    if picture is not None:
        fig, what = picture
        for path, fmt in targets:
            if fmt != "html":
                canvas.save(fig, path, fmt)
                lines.append(f"{path}: {what}")
    return lines


def highlight_tasks(prog: MegakernelProgram, which: str, validation: Any = None
                    ) -> tuple[str, tuple[int, ...]]:
    """The tasks of one validator finding: ``which`` is its 1-based number among the errors (as
    ``validate`` and ``explain`` list them) or its code (the first error with that code);
    ``validation``: ``validate(prog)`` when the caller has it already."""
    from amkspec.proofs import Severity, validated

    errors = [d for d in validated(prog, validation).diagnostics if d.severity is Severity.ERROR]
    if re.fullmatch(r"[0-9]+", which):
        if len(which) > 9 or not 1 <= int(which) <= len(errors):
            raise NoPicture(no_such_finding(which, f"the program has {count(len(errors), 'error')}"))
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
    layer: int | None = None, around: int | None = None, validation: Any = None,
) -> list[str]:
    """Write the program graph, highlighting the tasks of one finding when asked (``validation``:
    ``validate(prog)`` when the caller has it); ``layer`` or ``around`` draws one decoder layer or one
    task's neighbourhood (:class:`~amkspec.viz.graph.Focus`)."""
    from amkspec.viz.graph import Focus, graph_figure

    title, tasks = f"{source}: program graph", tuple[int, ...]()
    if highlight is not None:
        what, tasks = highlight_tasks(prog, highlight, validation)
        title = f"{source}: {what}"
    focus = Focus(layer, around) if layer is not None or around is not None else None
    fig = graph_figure(prog, tasks, title, focus=focus)
    lines = []
    for path, fmt in _targets(source, (svg, "svg"), (png, "png")):
        canvas.save(fig, path, fmt)
        lines.append(f"{path}: program graph of {len(prog.tasks)} tasks")
    return lines
