"""Pictures render, parse, and mark what they claim to, by element id (amkspec.viz)."""

from __future__ import annotations

import json
import time

import pytest

from amkspec.evidence.replay import check_witness
from amkspec.ir import Wait, from_dict
from amkspec.programs.gallery import EXAMPLES, layered, race_witness
from amkspec.smt import Prover
from amkspec.smt.explain import KIND_OF_CODE, explain
from amkspec.smt.witness import KINDS
from amkspec.viz import canvas
from amkspec.viz.graph import graph_figure
from amkspec.viz.program import index_program
from amkspec.viz.scene import MAX_TASKS, named_tasks, wait_cycle, witness_tasks
from amkspec.viz.timeline import timeline_figure
from tests.conftest import ROOT
from tests.viz.helpers import element, explained, ids, parse_svg, texts

MARKS = {
    "read-race": ["role-reader", "role-writer", "violation", "violation-text"],
    "kv-race": ["role-reader", "role-writer", "violation", "violation-text"],
    "unwritten-read": ["role-reader", "violation", "violation-text"],
    "write-race": ["role-first", "role-second", "violation", "violation-text"],
    "page-clobber": ["role-clobberer", "role-reader", "violation", "violation-text"],
    "deadlock": [],
    "cycle": [],
}
"""The violation's element ids that every timeline of a kind carries (blocked and cycle ids depend
on the tasks and are checked below)."""


def test_the_gallery_covers_every_witness_kind_explain_reports() -> None:
    reported = {kind for kind in KIND_OF_CODE.values() if kind in KINDS}
    assert {explained(title)[1]["witness"]["kind"] for title in EXAMPLES} == reported
    assert set(KINDS) == set(MARKS)


def test_a_cycle_witness_marks_every_edge() -> None:
    """``explain`` witnesses a cycle by its stuck state (D204); the cycle query's own witness draws too."""
    prog = EXAMPLES["cycle"]()
    witness = Prover(prog).cycle().witness
    assert witness is not None
    w = witness.to_dict(prog)
    found = ids(parse_svg(canvas.svg_text(timeline_figure(prog, w))))
    assert w["cycle"] and all(f"cycle-edge-{e['from']}-{e['to']}" in found for e in w["cycle"])


@pytest.mark.parametrize("title", list(EXAMPLES))
def test_timeline_of_each_gallery_example(title: str) -> None:
    prog, finding = explained(title)
    w = finding["witness"]
    root = parse_svg(canvas.svg_text(timeline_figure(prog, w)))
    found, words = ids(root), texts(root)
    names = {t.id: t.describe() for t in prog.tasks}
    for task in witness_tasks(w):
        assert f"task-{task}" in found, (title, task)
        assert names[task] in words, (title, names[task])
    for mark in MARKS[w["kind"]]:
        assert mark in found, (title, mark)
    for role, task in w["roles"].items():
        if f"role-{role}" in MARKS[w["kind"]]:
            assert f"task-{task}" in found
    for b in w["blocked"]:
        assert f"blocked-{b['task']}" in found
        why = "".join(element(root, f"blocked-{b['task']}-why").itertext())
        for wait in b["waits"]:
            assert f"c{wait['counter']} ≥ {wait['threshold']}, c{wait['counter']} = {wait['value']}" in why
        if b["queue_predecessor"] is not None:  # the queue edge, drawn alone or as an edge of the cycle
            edge = f"{b['queue_predecessor']}-{b['task']}"
            assert f"queue-{edge}" in found or f"cycle-edge-{edge}" in found
    for e in [*w["cycle"], *({"from": a.src, "to": a.dst} for a in wait_cycle(index_program(prog), w))]:
        assert f"cycle-edge-{e['from']}-{e['to']}" in found
    assert "legend" in found


@pytest.mark.parametrize("title", list(EXAMPLES))
def test_program_graph_of_each_gallery_example(title: str) -> None:
    prog, finding = explained(title)
    root = parse_svg(canvas.svg_text(graph_figure(prog, finding["tasks"], title)))
    found = ids(root)
    producers: dict[int, list[int]] = {}
    for t in prog.tasks:
        producers.setdefault(t.out_counter, []).append(t.id)
    for t in prog.tasks:
        assert f"task-{t.id}" in found
        assert (f"highlight-{t.id}" in found) == (t.id in finding["tasks"])
        for wait in t.waits:
            for p in producers.get(wait.counter, []):
                assert f"edge-{p}-{t.id}-c{wait.counter}" in found
            assert f"c{wait.counter} ≥ {wait.threshold}" in texts(root)


def test_prefixes_keep_ids_apart_and_png_is_a_png() -> None:
    prog, finding = explained("partial-join read race")
    fig = timeline_figure(prog, finding["witness"], "f7-")
    assert "f7-role-reader" in ids(parse_svg(canvas.svg_text(fig)))
    assert canvas.png_bytes(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_100k_task_witness_renders_its_neighbourhood_in_bounded_time() -> None:
    prog, w = race_witness(100_000)
    check_witness(prog, w)  # a genuine witness: the replay checker confirms the race
    start = time.perf_counter()
    root = parse_svg(canvas.svg_text(timeline_figure(prog, w)))
    seconds = time.perf_counter() - start
    found = ids(root)
    drawn = {i for i in found if i.startswith("task-")}
    assert len(drawn) <= MAX_TASKS
    assert {f"task-{w['roles']['reader']}", f"task-{w['roles']['writer']}"} <= drawn
    assert {"role-reader", "role-writer", "violation", "neighbourhood"} <= found
    assert "100000 tasks" in "".join(element(root, "neighbourhood").itertext())
    assert seconds < 60, seconds


CASES = sorted(
    p
    for family in ("races", "deadlock", "structure")
    for p in (ROOT / "corpus" / "cases" / family).glob("*.json")
    if not p.name.endswith("_ok.json")
)


def test_every_witness_of_the_conformance_cases_draws_all_its_tasks() -> None:
    drawn = 0
    for path in CASES:
        prog = from_dict(json.loads(path.read_text())["program"])
        for finding in explain(prog).to_dict(prog)["findings"]:
            if finding["witness"]:
                found = ids(parse_svg(canvas.svg_text(timeline_figure(prog, finding["witness"]))))
                assert {f"task-{t}" for t in witness_tasks(finding["witness"])} <= found, path.name
                drawn += 1
    assert drawn >= 10  # the corpus has a witness of every kind; none may be skipped silently


def test_a_large_stuck_state_draws_its_root_first_and_says_what_is_left_out() -> None:
    prog = layered(400)
    prog.tasks[0].waits = [Wait(counter=999, threshold=1)]  # a counter nobody increments
    finding = next(f for f in explain(prog).to_dict(prog)["findings"] if f["witness"])
    w = finding["witness"]
    assert len(w["blocked"]) > MAX_TASKS
    root = parse_svg(canvas.svg_text(timeline_figure(prog, w)))
    found = ids(root)
    assert len({i for i in found if i.startswith("blocked-") and not i.endswith("-why")}) == MAX_TASKS
    assert "c999 ≥ 1, c999 = 0" in "".join(element(root, "blocked-0-why").itertext())
    assert f"names {len(named_tasks(w))} of the program's 400 tasks" in "".join(
        element(root, "neighbourhood").itertext()
    )
