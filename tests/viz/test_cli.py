"""``amkspec explain --svg/--png/--html`` and ``amkspec info --svg/--png --highlight``."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from amkspec.cli import main
from amkspec.ir import load
from tests.conftest import EXAMPLES, ROOT
from tests.viz.helpers import SVG, ids, parse_svg

XHTML = "{http://www.w3.org/1999/xhtml}"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_explain_writes_a_report_that_shows_the_race(tmp_path: Path) -> None:
    html, svg, png = tmp_path / "out.html", tmp_path / "t.svg", tmp_path / "t.png"
    src = str(EXAMPLES / "rejected_partial_join.json")
    code, out, _ = run("explain", src, "--html", str(html), "--svg", str(svg), "--png", str(png))
    assert code == 1 and "REJECTED" in out
    assert f"wrote {html}" in out and f"wrote {svg}" in out
    page = ET.parse(html).getroot()  # well-formed XHTML
    text = "".join(page.itertext())
    assert "REJECTED" in text and "R301" in text and "witnessed" in text
    pictures = page.findall(f".//{SVG}svg")
    assert len(pictures) == 2  # the timeline and the graph of the one finding
    found = ids(page)
    assert {"finding-1", "f1-role-reader", "f1-role-writer", "f1-violation", "f1-g-highlight-3"} <= found
    (table,) = page.findall(f".//{XHTML}table")
    assert len(table.findall(f".//{XHTML}tbody/{XHTML}tr")) == 6  # the six events of the witness
    assert "f1-role-reader" not in html.read_text().split("<svg")[0]
    assert {"role-reader", "violation"} <= ids(parse_svg(svg.read_text()))
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_explain_picks_a_finding_and_refuses_what_does_not_exist(tmp_path: Path) -> None:
    src = str(EXAMPLES / "rejected_partial_join.json")
    html = tmp_path / "a.html"
    svg = str(tmp_path / "a.svg")
    code, _, err = run("explain", src, "--svg", svg, "--finding", "2", "--html", str(html))
    assert code == 2 and err.count("\n") == 1
    assert "there is no finding 2: findings are numbered from 1 and the program has 1 finding" in err
    assert not html.exists() and not (tmp_path / "a.svg").exists()  # refused before writing anything


def test_an_accepted_program_gets_a_report_with_its_graph(tmp_path: Path) -> None:
    html = tmp_path / "ok.html"
    code, _, _ = run("explain", str(EXAMPLES / "spec_example.json"), "--html", str(html))
    assert code == 0
    page = ET.parse(html).getroot()
    assert "ACCEPTED" in "".join(page.itertext()) and "proved" in "".join(page.itertext())
    prog = load(EXAMPLES / "spec_example.json")
    assert {f"g-task-{t.id}" for t in prog.tasks} <= ids(page)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_info_draws_every_bundled_example(tmp_path: Path, name: str) -> None:
    svg = tmp_path / "g.svg"
    code, out, _ = run("info", str(EXAMPLES / name), "--svg", str(svg))
    assert code == 0 and f"wrote {svg}" in out
    found = ids(parse_svg(svg.read_text()))
    assert {f"task-{t.id}" for t in load(EXAMPLES / name).tasks} <= found


def test_info_highlights_one_finding_by_number_or_code(tmp_path: Path) -> None:
    src = str(EXAMPLES / "rejected_partial_join.json")
    for which in ("1", "r301"):
        png, svg = tmp_path / f"{which}.png", tmp_path / f"{which}.svg"
        code, _, _ = run("info", src, "--svg", str(svg), "--png", str(png), "--highlight", which)
        assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"
        found = ids(parse_svg(svg.read_text()))
        assert {"highlight-0", "highlight-1", "highlight-2", "highlight-3"} <= found
    for bad, why in (
        ("9", "no finding 9"),
        ("D204", "no finding has code D204"),
        ("\u00b2", "no finding has code \u00b2"),
        ("\u0661", "no finding has code \u0661"),
        ("9" * 5000, "no finding 9999"),
        ("x\nvalid: yes", "no finding has code 'x\\nvalid: yes'"),
    ):
        code, _, err = run("info", src, "--svg", str(tmp_path / "x.svg"), "--highlight", bad)
        assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run("info", src, "--highlight", "1")
    assert code == 2 and "--highlight needs --svg or --png" in err


def test_without_matplotlib_the_cli_says_which_extra_to_install(tmp_path: Path) -> None:
    probe = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from amkspec.cli import main\n"
        f"main(['info', {str(EXAMPLES / 'spec_example.json')!r}, '--svg', {str(tmp_path / 'g.svg')!r}])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "amkspec[viz]" in out.stderr


def test_nothing_below_viz_imports_matplotlib() -> None:
    probe = (
        "import sys, amkspec.ir, amkspec.proofs, amkspec.cli\n"
        "import amkspec.viz.scene, amkspec.viz.layout, amkspec.viz.export\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
