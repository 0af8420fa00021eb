"""Regression tests of issue 27 (a newcomer's first hour): one test per finding, each failed
before its fix. Unusable input gets one error line and exit 2; nothing is written but what the
user named."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main
from tests.conftest import EXAMPLES

ACCEPTED = str(EXAMPLES / "decoder_layer.json")
REJECTED = str(EXAMPLES / "rejected_partial_join.json")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error(result: Result, code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("args", [("explain", REJECTED, "--png"), ("fmt", ACCEPTED, "-o")])
def test_writing_into_a_missing_directory_names_the_destination(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    target = tmp_path / "missing" / "x.png"
    line = one_error(run(*args, str(target)))
    assert f"{target}: " in line and f"its directory {target.parent} does not exist" in line
    assert ".tmp" not in line


def test_explain_of_an_accepted_program_draws_its_graph_and_still_writes_the_report(tmp_path: Path) -> None:
    png, html = tmp_path / "a.png", tmp_path / "a.html"
    result = run("explain", ACCEPTED, "--png", str(png), "--html", str(html))
    assert result.exit_code == 0, result.stderr
    assert png.read_bytes()[:4] == b"\x89PNG" and html.exists()
    assert f"wrote {png}: program graph (accepted: 5 proofs, no witness to draw)" in result.stdout


def test_the_report_of_an_accepted_program_counts_proofs_not_findings(tmp_path: Path) -> None:
    html = tmp_path / "a.html"
    result = run("explain", ACCEPTED, "--html", str(html))
    assert f"wrote {html}: report of 5 proofs" in result.stdout
    summary = "".join(ET.parse(html).getroot().itertext())
    assert "34 tasks; 5 proofs." in summary and "5 findings" not in summary
    rejected = tmp_path / "r.html"
    run("explain", REJECTED, "--html", str(rejected))
    assert "4 tasks; 1 finding (1 witnessed)." in "".join(ET.parse(rejected).getroot().itertext())


def test_finding_numbers_say_they_start_at_1_with_plurals_right(tmp_path: Path) -> None:
    line = one_error(run("info", REJECTED, "--svg", str(tmp_path / "x.svg"), "--highlight", "0"))
    assert line.endswith("there is no finding 0: findings are numbered from 1 and the program has 1 error")
    line = one_error(run("explain", REJECTED, "--png", str(tmp_path / "x.png"), "--finding", "5"))
    assert line.endswith("there is no finding 5: findings are numbered from 1 and the program has 1 finding")
    line = one_error(run("explain", ACCEPTED, "--png", str(tmp_path / "x.png"), "--finding", "6"))
    assert line.endswith("the program has 5 proofs")
    assert not re.search(r"\b1 (errors|findings)\b", line)


def _d204_program() -> str:
    """The conformance kit's D204 case: embed waits on the residual, which waits on the embed
    (directly, and through proj[t0]); proj[t1] is blocked without being on the cycle."""
    from amkspec.ir import BufferKind, DType, InstructionKind, ProgramBuilder, dumps

    k, act = InstructionKind, BufferKind.ACTIVATION
    b = ProgramBuilder()
    ids, table = b.new_buffer("ids", BufferKind.IO_INPUT, DType.I32, (1,)), b.new_buffer(
        "table", BufferKind.WEIGHT, DType.F32, (8, 16))
    x, h, y = (b.new_buffer(n, act, DType.F32, (1, 16)) for n in ("x", "h", "y"))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16))
    c0, c1, c2 = b.new_counter("embed"), b.new_counter("proj"), b.new_counter("residual")
    b.add_task(k.EMBED, [ids, table], [x], out_counter=c0, waits=[(c2, 1)], params={"hidden": 16},
               label="embed")
    for t in range(2):
        b.add_task(k.GEMV_TILE, [x, w], [h], out_counter=c1, waits=[(c0, 1)],
                   params={"N": 16, "K": 16, "N_tile": 8, "n_off": 8 * t}, label=f"proj[t{t}]")
    b.add_task(k.ADD, [x, h], [y], out_counter=c2, waits=[(c0, 1), (c1, 2)], label="residual")
    return dumps(b.build())


def test_the_cycle_picture_draws_the_cycle(tmp_path: Path) -> None:
    from tests.viz.helpers import element, ids, parse_svg, texts

    prog, svg = tmp_path / "d204.json", tmp_path / "d204.svg"
    prog.write_text(_d204_program())
    result = run("explain", str(prog), "--svg", str(svg))
    assert result.exit_code == 1 and "D204" in result.stdout
    root = parse_svg(svg.read_text())
    found, words = ids(root), texts(root)
    assert "deadlock: wait cycle 0:embed → 1:proj[t0] → 3:residual → 0:embed" in words, words
    edges = {"0-1": "c0", "1-3": "c1", "3-0": "c2"}
    for edge, via in edges.items():  # arrows along the cycle, each label on its own edge
        assert f"cycle-edge-{edge}" in found
        assert "".join(element(root, f"cycle-edge-{edge}-label").itertext()).strip() == via
    assert not {i for i in found if i.startswith("wait-")}, "arrows off the cycle converge on the residual"
