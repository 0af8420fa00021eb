"""Pictures of large programs: one decoder layer or one task's neighbourhood, each projection's
column tiles as one box (amkspec.viz.program.collapse_tiles, amkspec.viz.graph.Focus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amkspec.cli import main
from amkspec.lower import lower
from amkspec.viz.graph import Focus, NoFocus
from amkspec.viz.layout import graph_scene
from amkspec.viz.program import collapse_tiles, index_program
from tests.viz.helpers import ids, parse_svg, texts

PROG = lower("toy-2L", config={"tiling": {"gemv": {"N_tile": 16}}, "sm_assignment": {}})


def test_tiles_collapse_to_one_box_that_counts_them() -> None:
    ix, rep = collapse_tiles(index_program(PROG))
    gate = [t for t in PROG.tasks if t.label.startswith("L1.gate_proj[")]
    assert len(gate) == 8 and {rep[t.id] for t in gate} == {gate[0].id}
    assert ix.stands_for[gate[0].id] == 8 and ix.names[gate[0].id].endswith("[t0…t7] ×8")
    assert len(ix.order) == len({rep[t.id] for t in PROG.tasks})
    swiglu = next(t for t in PROG.tasks if t.label == "L1.swiglu")
    scene = graph_scene(ix, (), "", 200, (ix.order, "all"))
    ports = [p for p in scene.ports if p.task == swiglu.id]
    assert sorted((p.threshold, p.all_producers, len(p.producers)) for p in ports) == [(8, 8, 1), (8, 8, 1)]


def test_a_layer_is_its_tasks_only() -> None:
    ix, rep = collapse_tiles(index_program(PROG))
    chosen = Focus(layer=1).tasks(PROG, ix, rep)
    labels = {t.id: t.label for t in PROG.tasks}
    assert chosen and all(labels[t].startswith("L1.") for t in chosen)
    assert {rep[t.id] for t in PROG.tasks if t.label.startswith("L1.")} == set(chosen)
    with pytest.raises(NoFocus, match=r"no task is labelled L9\."):
        Focus(layer=9).tasks(PROG, ix, rep)


def test_around_is_the_neighbourhood() -> None:
    ix, rep = collapse_tiles(index_program(PROG))
    norm = next(t for t in PROG.tasks if t.label == "L0.post_norm")
    chosen = Focus(around=norm.id, hops=1).tasks(PROG, ix, rep)
    names = {ix.names[t].split(":", 1)[1] for t in chosen}
    assert names == {"L0.attn_residual", "L0.post_norm", "L0.gate_proj[t0…t7] ×8", "L0.up_proj[t0…t7] ×8"}


def test_info_draws_a_layer_of_a_model(tmp_path: Path) -> None:
    out = tmp_path / "layer.svg"
    result = CliRunner().invoke(main, ["info", "toy-2L", "--svg", str(out), "--layer", "0"])
    assert result.exit_code == 0, result.output
    root = parse_svg(out.read_text())
    drawn = {i for i in ids(root) if i.startswith("task-")}
    layer0 = {f"task-{t.id}" for t in lower("toy-2L").tasks if t.label.startswith("L0.")}
    assert drawn and drawn <= layer0
    assert "decoder layer 0" in texts(root)


@pytest.mark.parametrize(("args", "needle"), [
    (["--layer", "1"], "--layer needs --svg or --png"),
    (["--svg", "x.svg", "--layer", "5"], "no task is labelled L5."),
    (["--svg", "x.svg", "--around", "9999"], "there is no task 9999"),
    (["--svg", "x.svg", "--layer", "0", "--around", "1"], "not both"),
])
def test_bad_focus_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    args = [str(tmp_path / a) if a.endswith(".svg") else a for a in args]
    result = CliRunner().invoke(main, ["info", "toy-2L", *args])
    assert result.exit_code == 2 and needle in result.stderr and result.stderr.count("\n") == 1
