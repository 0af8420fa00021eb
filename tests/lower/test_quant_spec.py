"""A quantization spec is two plain ints, ``group`` within the GEMV's int32 param (spec §7.7): anything
else is a LoweringError from ``lower()`` and exit 2 from ``lower``/``weights``/``decode``, never a
program ``validate()`` rejects or an internal error (the lowering guide, "Weight-only quantization")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.cli import main
from amkspec.ir.opcodes import INT32_MAX
from amkspec.lower import LoweringError, lower
from amkspec.models import QuantSpec
from amkspec.proofs import validate

BAD_QUANTS = [
    {"bits": 4, "group": True},
    {"bits": 8, "group": 32.0},
    {"bits": 4, "group": 2.5},
    {"bits": 4, "group": "32"},
    {"bits": 4.0, "group": 32},
    {"bits": True, "group": 32},
    {"bits": 4, "group": INT32_MAX + 1},
    {"bits": 4, "group": 2**1000},
    {"bits": 4, "group": 0},
]


@pytest.mark.parametrize("quant", BAD_QUANTS)
def test_a_bad_quant_is_refused_by_the_spec_and_the_lowering(quant: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="quantization"):
        QuantSpec(**quant)
    with pytest.raises(LoweringError, match="quantization"):
        lower("toy", None, None, quant=quant)


def test_the_largest_int32_group_lowers_to_a_valid_program() -> None:
    prog = lower("toy", "rtx5090", None, quant={"bits": 4, "group": INT32_MAX})
    assert prog.meta["quant"]["group"] == INT32_MAX
    assert validate(prog).ok


@settings(max_examples=30, deadline=None)
@given(bits=st.sampled_from([4, 8]), group=st.integers(min_value=-(2**40), max_value=2**40))
def test_any_int_group_is_refused_or_lowers_to_a_valid_program(bits: int, group: int) -> None:
    try:
        prog = lower("toy", None, None, quant={"bits": bits, "group": group})
    except LoweringError:
        assert not 1 <= group <= INT32_MAX
        return
    assert validate(prog).ok


@pytest.mark.parametrize(
    "args",
    [
        ["lower", "toy", "--quant", "4", "--group", "4294967296"],
        ["weights", "toy", "--quant", "4", "--group", "4294967296", "-o", "{tmp}/w.npz"],
        ["decode", "toy", "--prompt-ids", "7", "--steps", "1", "--quant", "4", "--group",
         "99999999999999999999"],
    ],
)
def test_the_cli_refuses_a_group_outside_int32_with_exit_2(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "quantization group must be in" in result.stderr
    assert not (tmp_path / "w.npz").exists()
