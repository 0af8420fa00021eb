"""The fast canonical encoder writes exactly what ``json.dumps(doc, indent=2)`` writes (spec §6)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import FormatError, MegakernelProgram, dumps, to_dict
from amkspec.ir.canonical import canonical_json
from amkspec.programs.strategies import JSON_VALUES, arbitrary_programs

TRICKY = st.one_of(
    JSON_VALUES,
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e300, 5e-324, 2**70]),
    st.sampled_from(["é\u2028\x00\"\\", [], {}, [[]]]),
)


@given(st.recursive(TRICKY, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=10))
def test_equals_the_standard_library_on_any_json(doc: Any) -> None:
    assert canonical_json(doc) == json.dumps(doc, indent=2)


@given(arbitrary_programs())
def test_equals_the_standard_library_on_programs(prog: MegakernelProgram) -> None:
    assert dumps(prog) == json.dumps(to_dict(prog), indent=2)


@pytest.mark.parametrize("doc", [{1: "a", None: [True]}, {"a": 1.5, "b": [False, None]}, [1.0, 2], True])
def test_unusual_keys_and_scalars_follow_the_standard_library(doc: Any) -> None:
    assert canonical_json(doc) == json.dumps(doc, indent=2)


def test_errors_are_the_standard_librarys() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        canonical_json(loop)
    with pytest.raises(TypeError):
        canonical_json({"x": object()})
    prog = MegakernelProgram()
    prog.meta["bad"] = {1, 2}
    with pytest.raises(FormatError, match="not representable"):
        dumps(prog)
    prog.meta["bad"] = loop
    with pytest.raises(FormatError, match="not representable"):
        dumps(prog)
