"""Hypothesis strategies for ScheduleConfig documents: arbitrary JSON and near-valid configs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from amkspec.lower import knobs
from amkspec.search.space import default_document, put

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
)
JSON = st.recursive(JSON_SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)), max_leaves=12)
"""Any JSON value."""

KNOB_PATHS = [k.path for k in knobs.KNOBS]


def _bad_values(path: str) -> st.SearchStrategy[Any]:
    knob = knobs.KNOB_BY_PATH[path]
    edges = st.sampled_from([0, -1, 1, 31, 33, 48, 1024, 1056, 2**31, 10**30, "64", 64.0, True, None, [], {}])
    return st.one_of(st.sampled_from(knob.search_choices(None)), edges, JSON)


@st.composite
def near_valid(draw: st.DrawFn) -> dict[str, Any]:
    """The default config with a few knobs set to choices, edge values or arbitrary JSON."""
    doc = default_document()
    for path in draw(st.lists(st.sampled_from(KNOB_PATHS), max_size=3)):
        doc = put(doc, path, draw(_bad_values(path)))
    if draw(st.booleans()):
        doc[draw(st.sampled_from(["tiling", "extra_knob", "sm_assignment"]))] = draw(JSON)
    return doc


def config_documents() -> st.SearchStrategy[Any]:
    """Arbitrary JSON or (mostly) near-valid config documents."""
    return st.one_of(JSON, near_valid(), near_valid())
