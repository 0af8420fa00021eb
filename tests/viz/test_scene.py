"""What a timeline and a graph show, decided without drawing (amkspec.viz.scene, amkspec.viz.layout)."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from amkspec.ir import load
from amkspec.ir.graph import dependency_edges, topological_order
from amkspec.ir.trace import trace_from_json
from amkspec.programs.gallery import EXAMPLES, race_witness
from amkspec.programs.strategies import arbitrary_programs
from amkspec.smt.witness import annotate
from amkspec.viz.layout import MAX_GRAPH_TASKS, graph_scene
from amkspec.viz.program import index_program
from amkspec.viz.scene import MAX_TASKS, named_tasks, timeline_scene, wait_cycle, witness_tasks
from tests.conftest import EXAMPLES as EXAMPLES_DIR
from tests.viz.helpers import explained


def test_every_task_of_every_gallery_witness_is_in_its_scene() -> None:
    for title in EXAMPLES:
        prog, finding = explained(title)
        scene = timeline_scene(index_program(prog), finding["witness"])
        assert set(witness_tasks(finding["witness"])) <= scene.tasks, title
        assert not scene.note, title


def test_bars_run_from_start_to_end_in_witness_order() -> None:
    prog, finding = explained("page clobber")
    w = finding["witness"]
    scene = timeline_scene(index_program(prog), w)
    for bar in scene.bars:
        start = [n for n, ev in enumerate(w["events"]) if ev["task"] == bar.task and ev["event"] == "start"]
        end = [n for n, ev in enumerate(w["events"]) if ev["task"] == bar.task and ev["event"] == "end"]
        assert [bar.start] == start
        assert (bar.end is None) == (not end)
        assert bar.end is None or [bar.end] == end


def test_counter_values_agree_with_the_witness_annotation() -> None:
    prog, finding = explained("partial-join read race")
    w = finding["witness"]
    scene = timeline_scene(index_program(prog), w)
    annotated = annotate(prog, trace_from_json(w["events"]))
    for track in scene.counters:
        for x, ev in enumerate(annotated):
            if str(track.counter) in ev["counters"]:
                assert track.values[x] == ev["counters"][str(track.counter)]
    (track,) = [t for t in scene.counters if t.counter == prog.tasks[2].waits[0].counter]
    assert track.full == 2 and [th.value for th in track.thresholds] == [1]


def test_blocked_tasks_say_which_wait_fails_and_at_which_value() -> None:
    prog, finding = explained("unsatisfiable threshold")
    scene = timeline_scene(index_program(prog), finding["witness"])
    (ghost,) = scene.ghosts
    blocked = finding["witness"]["blocked"][0]
    wait = blocked["waits"][0]
    assert ghost.task == blocked["task"] and ghost.kind == "blocked"
    assert ghost.why == (
        f"waits c{wait['counter']} ≥ {wait['threshold']}, c{wait['counter']} = {wait['value']}",
    )


def test_unknown_witness_fields_are_ignored() -> None:
    prog, finding = explained("overlapping tiles")
    w: dict[str, Any] = {
        **finding["witness"],
        "replayed": True,
        "roles": {**finding["witness"]["roles"], "x": "y"},
    }
    scene = timeline_scene(index_program(prog), w)
    assert scene.roles.keys() == {"first", "second"}


def test_a_large_witness_is_drawn_as_its_neighbourhood_and_says_so() -> None:
    prog, w = race_witness(400)
    ix = index_program(prog)
    scene = timeline_scene(ix, w)
    assert len(scene.tasks) <= MAX_TASKS
    assert set(named_tasks(w)) <= scene.tasks
    assert set(ix.preds(w["roles"]["reader"])) <= scene.tasks
    assert "Neighbourhood" in scene.note and f"of {len(prog.tasks)} tasks" in scene.note
    assert scene.steps[-1] == len(w["events"])
    assert all(a < b for a, b in zip(scene.steps, scene.steps[1:], strict=False))


def test_graph_layers_follow_the_edges_and_barycentres_centre_the_rows() -> None:
    prog, _ = explained("page clobber")
    scene = graph_scene(index_program(prog))
    for a, b in dependency_edges(prog):
        assert scene.layer[a] < scene.layer[b]
    for d in set(scene.layer.values()):
        rows = [scene.row[t] for t in scene.layer if scene.layer[t] == d]
        assert abs(sum(rows)) < 1e-9 and len(set(rows)) == len(rows)


def test_a_large_graph_is_cut_to_the_highlighted_neighbourhood() -> None:
    prog, w = race_witness(1000)
    reader = w["roles"]["reader"]
    scene = graph_scene(index_program(prog), [reader])
    assert len(scene.tasks) <= MAX_GRAPH_TASKS and reader in scene.tasks
    assert "highlighted" in scene.note
    assert "first" in graph_scene(index_program(prog)).note


@given(arbitrary_programs())
def test_the_layout_places_every_task_of_any_program(prog: Any) -> None:
    ix = index_program(prog)
    scene = graph_scene(ix)
    assert set(scene.layer) == set(ix.order) == set(scene.row)
    if topological_order(prog) is not None:
        for a, b in dependency_edges(prog):
            if a in scene.layer and b in scene.layer:
                assert scene.layer[a] < scene.layer[b]


def test_deep_graphs_run_top_down_and_shallow_ones_left_to_right() -> None:
    from amkspec.viz.graph import _Graph

    for name, down in (("decoder_layer.json", True), ("rejected_partial_join.json", False)):
        prog = load(EXAMPLES_DIR / name)
        ix = index_program(prog)
        g = _Graph(graph_scene(ix), ix, "")
        assert g.down is down, name
        for a, b in dependency_edges(prog):
            (ax, ay), (bx, by) = g.at(a), g.at(b)
            assert (ay > by) if down else (ax < bx), (name, a, b)


def test_a_stuck_state_shows_its_wait_cycle_edge_by_edge() -> None:
    """Each edge holds back the next task (a producer of an unmet wait, or the SM queue); a stuck
    state without a cycle (a threshold no producer count reaches) has none, and says nothing of one."""
    expected = {
        "cycle": [(0, 1, "c0"), (1, 0, "c1")],
        "SM-queue deadlock": [(0, 1, "SM queue"), (1, 2, "c1"), (2, 0, "c0")],
    }
    for title, edges in expected.items():
        prog, finding = explained(title)
        ix = index_program(prog)
        assert [(e.src, e.dst, e.via) for e in wait_cycle(ix, finding["witness"])] == edges
        scene = timeline_scene(ix, finding["witness"])
        assert scene.title.startswith("deadlock: wait cycle ")
        assert [lane.task for lane in scene.lanes][: len(edges)] == [src for src, _, _ in edges]
    prog, finding = explained("unsatisfiable threshold")
    assert wait_cycle(index_program(prog), finding["witness"]) == []
    assert "cycle" not in timeline_scene(index_program(prog), finding["witness"]).title
