"""``amkspec run --inputs x.json``: JSON numbers convert to an integer input only when nothing is
lost (spec §2, binding; the lowering guide, "Command line"), as from ``.npz``: ``7.9`` is refused
with exit 2, never run as token 7."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.lower import lower
from tests.conftest import FIXTURES

WEIGHTS = str(FIXTURES / "toy-1L.weights.npz")


def _run(tmp_path: Path, feed: dict[str, object], suffix: str = ".json") -> tuple[int, str, str]:
    prog = tmp_path / "p.json"
    prog.write_text(amkspec.dumps(lower("toy", "rtx5090", {"tiling": {"gemv": {"N_tile": 64}}})))
    inputs = tmp_path / f"in{suffix}"
    if suffix == ".json":
        inputs.write_text(json.dumps(feed))
    else:
        np.savez(inputs, **{k: np.asarray(v) for k, v in feed.items()})  # type: ignore[arg-type]
    result = CliRunner().invoke(main, ["run", str(prog), "--weights", WEIGHTS, "--inputs", str(inputs)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("feed", "name"),
    [
        ({"token_id": [7.9], "pos": [0], "reshape_id0": [0]}, "token_id"),
        ({"token_id": [7], "pos": [0.5], "reshape_id0": [0]}, "pos"),
        ({"token_id": [7], "pos": [0], "reshape_id0": [1e-9]}, "reshape_id0"),
        ({"token_id": [7.0e10], "pos": [0], "reshape_id0": [0]}, "token_id"),
    ],
)
def test_a_number_an_int32_input_cannot_hold_is_refused(feed: dict[str, object], name: str,
                                                        tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, feed)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"input '{name}'" in err and "does not convert losslessly" in err


def test_json_and_npz_refuse_the_same_fraction(tmp_path: Path) -> None:
    feed = {"token_id": [7.9], "pos": [0], "reshape_id0": [0]}
    assert _run(tmp_path, feed)[0] == _run(tmp_path, feed, ".npz")[0] == 2


def test_whole_numbers_written_as_floats_are_the_integers(tmp_path: Path) -> None:
    as_float = _run(tmp_path, {"token_id": [7.0], "pos": [0.0], "reshape_id0": [0]})
    as_int = _run(tmp_path, {"token_id": [7], "pos": [0], "reshape_id0": [0]})
    assert as_float[0] == as_int[0] == 0
    assert as_float[1].split(" (")[0] == as_int[1].split(" (")[0]
