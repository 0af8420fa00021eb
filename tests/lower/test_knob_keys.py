"""A knob issue's path names the offending key exactly (amkspec.lower.knobs): a plain identifier as
it is, anything else JSON-quoted and escaped, so ``"pipelining_depth "`` is never reported as the
known knob ``pipelining_depth``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from amkspec.cli import main
from amkspec.lower.knobs import KNOB_BY_PATH, TILING_SECTIONS, UNKNOWN, check


def _unknown_paths(doc: dict[str, object]) -> list[str]:
    issues = check(doc)
    assert issues and all(i.code == UNKNOWN for i in issues)
    return [i.path for i in issues]


def test_whitespace_and_control_characters_are_shown_escaped() -> None:
    assert _unknown_paths({"pipelining_depth ": 2}) == ['"pipelining_depth "']
    assert _unknown_paths({"pipelining_depth\t": 2}) == ['"pipelining_depth\\t"']
    assert _unknown_paths({"bad\nkey\u2028x": 1}) == ['"bad\\nkey\\u2028x"']
    assert _unknown_paths({"tiling": {"gemv ": {"N_tile": 64}}}) == ['tiling."gemv "']


def test_plain_identifiers_stay_as_they_are() -> None:
    assert _unknown_paths({"warp_specialize": True}) == ["warp_specialize"]
    assert _unknown_paths({"tiling": {"mlp": {}}}) == ["tiling.mlp"]


def _names(shown: str, key: str) -> bool:
    """``shown`` is ``key`` itself, its JSON string, or that string cut short with "…"."""
    if not shown.startswith('"'):
        return shown == key
    quoted = json.dumps(key, ensure_ascii=True)
    return shown == quoted or (shown.endswith("…") and quoted.startswith(shown[:-1]))


@given(st.text(max_size=60))
def test_a_path_names_exactly_the_key(key: str) -> None:
    if key not in KNOB_BY_PATH and key != "tiling":
        assert _names(_unknown_paths({key: 1})[0], key)
    if key not in TILING_SECTIONS:
        path = _unknown_paths({"tiling": {key: {}}})[0]
        assert path.startswith("tiling.") and _names(path[len("tiling."):], key)


def test_the_cli_names_the_key_with_its_space(tmp_path: Path) -> None:
    cfg = tmp_path / "sp.json"
    cfg.write_text('{"pipelining_depth ": 2}')
    result = CliRunner().invoke(main, ["lower", "toy", "--target", "t4", "--config", str(cfg)])
    assert result.exit_code == 2
    assert 'knob:unknown "pipelining_depth ": unknown knob' in result.stderr
