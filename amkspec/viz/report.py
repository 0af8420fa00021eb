"""One self-contained HTML file for ``amkspec explain --html``: the verdict, every finding with its
rule (spec clause and diagnostic code), its witness table and inline SVG pictures (spec §3).

The input is ``explain``'s documented JSON form (``{"verdict", "findings": [...]}``,
see :mod:`amkspec.smt.explain`); unknown fields are ignored. The page needs no
network and no script: styles are inline, pictures are inline ``<svg>`` elements
whose ids are prefixed ``f<N>-`` (finding N's timeline) and ``f<N>-g-`` (its graph)
so they stay unique on the page. The page is well-formed XML (XHTML syntax).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from amkspec import __version__
from amkspec.ir import MegakernelProgram
from amkspec.text import count, escape_line, tally
from amkspec.viz import canvas
from amkspec.viz.graph import graph_figure
from amkspec.viz.program import ProgramIndex, index_program
from amkspec.viz.timeline import timeline_figure


def escape(text: str) -> str:
    """``text`` as HTML: control characters escaped as in text reports, markup characters as entities."""
    return html.escape(escape_line(text))


MAX_PICTURED = 12
"""Findings past this many are listed without pictures (the page stays small)."""

STYLE = """
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 2em; color: #222; max-width: 80em; }
h1 .rejected { color: #d62728; } h1 .accepted { color: #2c7a2c; }
section.finding { border-top: 1px solid #ccc; margin-top: 2em; padding-top: 0.5em; }
.status { display: inline-block; padding: 0 0.4em; border-radius: 0.3em; font-size: 0.8em; color: white; }
.witnessed { background: #d62728; } .rule-only { background: #777; } .proved { background: #2c7a2c; }
.property { font-weight: bold; color: #d62728; }
.pic { overflow-x: auto; margin: 1em 0; } .pic svg { max-width: none; height: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 0.15em 0.6em; text-align: left; } th { background: #f3f3f3; }
code { font-size: 0.95em; } footer { margin-top: 3em; color: #777; font-size: 0.8em; }
"""


def _table(head: list[str], rows: list[list[str]], cls: str) -> str:
    """An HTML table of already-escaped cells."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def witness_rows(ix: ProgramIndex, w: Mapping[str, Any]) -> list[list[str]]:
    """The witness as table rows: numbered events with counter values, then blocked tasks and
    cycle edges (escaped HTML)."""
    rows = []
    for n, ev in enumerate(w.get("events") or (), 1):
        values = ", ".join(f"c{c} = {v}" for c, v in (ev.get("counters") or {}).items())
        rows.append(
            [str(n), escape(ev["event"]), f"<code>{escape(ix.name(ev['task']))}</code>", escape(values)]
        )
    for b in w.get("blocked") or ():
        why = [
            f"waits c{x['counter']} ≥ {x['threshold']}, c{x['counter']} = {x['value']}" for x in b["waits"]
        ]
        if b.get("queue_predecessor") is not None:
            why.append(f"queued behind {ix.name(b['queue_predecessor'])}")
        rows.append(["—", "blocked", f"<code>{escape(ix.name(b['task']))}</code>", escape("; ".join(why))])
    for e in w.get("cycle") or ():
        edge = f"<code>{escape(ix.name(e['from']))}</code> → <code>{escape(ix.name(e['to']))}</code>"
        rows.append(["—", "edge", edge, escape(e["via"])])
    return rows


def _finding(prog: MegakernelProgram, ix: ProgramIndex, n: int, f: Mapping[str, Any], pictured: bool) -> str:
    status = str(f.get("status", ""))
    head = (
        f'<h2>{n}. <span class="status {escape(status)}">{escape(status)}</span> '
        f"<code>{escape(str(f.get('code') or '—'))}</code> {escape(str(f.get('clause', '')))} "
        f"{escape(str(f.get('kind', '')))}</h2>"
    )
    parts = [
        f'<section class="finding" id="finding-{n}">',
        head,
        f"<p>{escape(str(f.get('message', '')))}</p>",
    ]
    w = f.get("witness")
    if w:
        parts.append(f'<p class="property">{escape(str(w.get("property", "")))}</p>')
        if pictured:
            parts.append(f'<div class="pic">{canvas.inline_svg(timeline_figure(prog, w, f"f{n}-"))}</div>')
        parts.append(
            _table(["Step", "Event", "Task", "Counters after / why"], witness_rows(ix, w), "witness")
        )
    tasks = [t for t in f.get("tasks") or () if type(t) is int]
    if pictured and tasks:
        fig = graph_figure(prog, tasks, f"The tasks of finding {n} in the program graph", f"f{n}-g-")
        parts.append(f'<div class="pic">{canvas.inline_svg(fig)}</div>')
    parts.append("</section>")
    return "\n".join(parts)


def report_html(prog: MegakernelProgram, explanation: Mapping[str, Any], source: str) -> str:
    """The report page of ``explain``'s result for ``prog`` (read from ``source``)."""
    ix = index_program(prog)
    verdict = str(explanation.get("verdict", ""))
    findings = list(explanation.get("findings") or ())
    counts: dict[str, int] = {}
    for f in findings:
        if f.get("status") != "proved":
            counts[str(f.get("status"))] = counts.get(str(f.get("status")), 0) + 1
    summary = f" ({', '.join(f'{k} {escape(s)}' for s, k in counts.items())})" if counts else ""
    word = f'<span class="{escape(verdict)}">{escape(verdict.upper())}</span>'
    body = [
        f"<h1><code>{escape(source)}</code>: {word}</h1>",
        f"<p>{count(len(ix.order), 'task')}; {escape(tally(findings))}{summary}. "
        "A <em>witnessed</em> finding comes with an execution, found by Z3 and replayed, that shows it; a "
        "<em>rule-only</em> one is forbidden by the spec though no execution misbehaves; <em>proved</em> "
        "means no execution of this program has that kind of violation.</p>",
    ]
    pictured = 0
    for n, f in enumerate(findings, 1):
        draw = f.get("status") != "proved" and pictured < MAX_PICTURED
        pictured += draw
        body.append(_finding(prog, ix, n, f, draw))
    if pictured < len([f for f in findings if f.get("status") != "proved"]):
        body.append(f"<p>Pictures are drawn for the first {MAX_PICTURED} findings.</p>")
    if verdict == "accepted":
        fig = graph_figure(prog, (), f"{source}: program graph", "g-")
        body.append(
            f'<section><h2>Program graph</h2><div class="pic">{canvas.inline_svg(fig)}</div></section>'
        )
    command = f"<code>amkspec explain {escape(source)} --html</code>"
    body.append(f"<footer>amkspec {escape(__version__)} · {command}</footer>")
    return (
        '<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml" lang="en">\n'
        '<head>\n<meta charset="utf-8"/>\n'
        f"<title>amkspec explain: {escape(source)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
