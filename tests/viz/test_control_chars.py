"""Labels holding control characters still make well-formed pictures and reports, silently.

XML 1.0 forbids most control characters, and no font has their glyphs: every text of a figure is
drawn escaped (``a\\x01b``), the HTML report escapes them as the text reports do, and
matplotlib's missing-glyph warnings never reach stderr.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.programs.small import scale_chain
from tests.conftest import ROOT
from tests.viz.helpers import parse_svg, texts

pytest.importorskip("matplotlib", reason="pictures need the viz extra")

LABELS = ("a\x01b", "nul\x00\x0bend\u4e00")
"""Two tasks' labels: control characters XML forbids, and a CJK glyph DejaVu Sans lacks."""
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@pytest.fixture
def racy(tmp_path: Path) -> str:
    """The racy two-task scale_chain (a witnessed R303) with :data:`LABELS` as its task labels."""
    prog = scale_chain(scale_waits=False)
    for task, label in zip(prog.tasks, LABELS, strict=True):
        task.label = label
    path = tmp_path / "racy.json"
    amkspec.dump(prog, str(path))
    return str(path)


def _run(*args: str) -> tuple[int, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, list(args))
    assert not [w for w in caught if "Glyph" in str(w.message)], [str(w.message) for w in caught]
    return result.exit_code, result.stderr


@pytest.mark.parametrize("command", [["info", "--svg"], ["info", "--highlight", "1", "--svg"],
                                     ["explain", "--svg"]])
def test_an_svg_with_control_characters_in_labels_is_well_formed(racy: str, tmp_path: Path,
                                                                 command: list[str]) -> None:
    out = tmp_path / "out.svg"
    code, err = _run(command[0], racy, *command[1:], str(out))
    assert code in (0, 1) and err == ""
    text = out.read_text(encoding="utf-8")
    assert not FORBIDDEN.search(text)
    shown = texts(parse_svg(text))
    assert "a\\x01b" in shown or "nul\\x00\\x0bend" in shown


def test_the_html_report_escapes_them_too(racy: str, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, err = _run("explain", racy, "--html", str(out))
    assert code == 1 and err == ""
    page = out.read_text(encoding="utf-8")
    assert not FORBIDDEN.search(page)
    assert "a\\x01b" in "".join(ET.fromstring(page.encode("utf-8")).itertext())


def test_a_png_is_written_without_warnings_on_stderr(racy: str, tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    done = subprocess.run([sys.executable, "-m", "amkspec", "info", racy, "--png", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == ""
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("command", [["info", "--svg"], ["explain", "--svg"], ["explain", "--html"]])
def test_a_label_that_looks_like_tex_is_drawn_as_written(tmp_path: Path, command: list[str]) -> None:
    prog = scale_chain(scale_waits=False)
    prog.tasks[0].label, prog.tasks[1].label = "$\\frac$", "x$^{2}$"
    src, out = tmp_path / "tex.json", tmp_path / f"out.{command[1][2:]}"
    amkspec.dump(prog, str(src))
    code, err = _run(command[0], str(src), command[1], str(out))
    assert code in (0, 1) and err == ""
    assert "x$^{2}$" in "".join(ET.fromstring(out.read_bytes()).itertext())
