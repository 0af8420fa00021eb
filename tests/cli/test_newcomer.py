"""Regression tests of issue 27 (a newcomer's first hour): one test per finding, each failed
before its fix. Unusable input gets one error line and exit 2; nothing is written but what the
user named."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _evaluate(tmp: Path, document: str, *extra: str) -> tuple[Result, dict[str, Any]]:
    cfg = tmp / "cfg.json"
    cfg.write_text(document)
    result = run("evaluate", "toy", "--target", "h100", "--config", str(cfg), *extra)
    return result, json.loads(result.stdout) if result.stdout else {}


def test_proposes_output_is_a_config_evaluate_and_lower_take(tmp_path: Path) -> None:
    """One format: what ``propose`` prints is what ``evaluate --config`` and ``lower --config`` read."""
    proposal = run("propose", "toy", "--target", "h100")
    assert proposal.exit_code == 0
    result, verdict = _evaluate(tmp_path, proposal.stdout)
    assert result.exit_code == 0 and verdict["valid"] and verdict["correct"], verdict
    assert verdict["schedule_id"] == json.loads(proposal.stdout)["schedule_id"]
    lowered = run("lower", "toy", "--target", "h100", "--config", str(tmp_path / "cfg.json"))
    assert lowered.exit_code == 0 and len(json.loads(lowered.stdout)["tasks"]) == verdict["tasks"]


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**80), 2**80), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
_STRICT_JSON = st.recursive(
    _SCALARS,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=10,
)
"""Any JSON value a file can hold (strict JSON: no NaN or infinity)."""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_STRICT_JSON, st.sampled_from([None, [], [1, 2], 3, "x", {"tiling": [None]}])))
def test_evaluate_judges_any_json_value_as_a_config(tmp_path: Path, doc: Any) -> None:
    """The loop contract: evaluate never crashes; a malformed config is a valid=false verdict with a
    rejected_reason (exit 1), whatever JSON value the file holds."""
    result, verdict = _evaluate(tmp_path, json.dumps(doc))
    assert result.exit_code in (0, 1) and result.stderr == "", result.stderr
    assert verdict["valid"] == (result.exit_code == 0) == verdict["correct"]
    if not verdict["valid"]:
        assert verdict["failure"] == "rejected" and verdict["rejected_reason"] and verdict["rejected_codes"]


def test_the_distance_from_the_roofline_reads_as_what_it_is() -> None:
    """``latency_over_bound`` = latency / HBM floor (≥ 1), not a "percentage" of 34495."""
    from amkspec.search.verdict import Verdict

    result = run("evaluate", "toy-2L", "--target", "h100")
    verdict = json.loads(result.stdout)
    assert result.exit_code == 0 and "pct_of_roofline" not in verdict and verdict["verdict_version"] == 2
    ratio = verdict["latency_us"] / verdict["bound_us"]
    assert verdict["latency_over_bound"] == pytest.approx(ratio, rel=1e-3) and ratio >= 1
    old = {k: v for k, v in verdict.items() if k not in ("latency_over_bound", "verdict_version")}
    old["pct_of_roofline"] = verdict["latency_over_bound"] * 100  # a version-1 verdict from a search cache
    assert Verdict.from_dict(old).latency_over_bound == pytest.approx(verdict["latency_over_bound"])


def test_lower_without_a_config_says_it_is_not_evaluates_default() -> None:
    """``lower toy-2L`` (66 tasks) and ``evaluate``'s default config (48 tasks) differ: lower says why."""
    result = run("lower", "toy-2L")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["tasks"]) == 66
    (note,) = result.stderr.strip().splitlines()
    assert note.startswith("amkspec: note: no --config: the original's auto tiling")
    assert "default config" in note and "amkspec propose" in note
    with_config = run("lower", "toy-2L", "--target", "h100", "--config", str(EXAMPLES / "decoder_layer.json"))
    assert with_config.exit_code == 0 and with_config.stderr == ""
