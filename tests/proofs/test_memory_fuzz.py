"""Memory safety never raises, whatever the params, shapes or recipes; valid programs pass (spec §7)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import PARAM_FIELDS, InstructionKind, MegakernelProgram
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs.memory import check_memory_safety

KEYS = [*sorted(PARAM_FIELDS), "recipe"]
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.integers(-3, 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.none(),
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["steps", "op", "args", "out", "params", "out_shape", "out_dtype", "in", "s", "K"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
PARAMS = st.dictionaries(st.sampled_from(KEYS), JSONISH, max_size=6)


def _step() -> st.SearchStrategy[dict[str, Any]]:
    ref = st.fixed_dictionaries({"in": st.integers(-1, 3)}) | st.fixed_dictionaries({"s": st.integers(-1, 3)})
    return st.fixed_dictionaries(
        {
            "op": st.integers(0, 20),
            "args": st.lists(ref, max_size=4),
            "out": st.sampled_from(["final", -1, 0, 1, 2]),
        },
        optional={
            "params": PARAMS,
            "out_shape": st.lists(st.integers(0, 9), max_size=3),
            "out_dtype": st.sampled_from(["float32", "int8", "float64", "int4"]),
        },
    )


RECIPES = st.fixed_dictionaries({"steps": st.lists(_step(), max_size=4)})


@given(arbitrary_programs())
def test_never_raises_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    check_memory_safety(prog)


@given(valid_programs(max_tasks=24, permute_ids=True))
def test_valid_programs_have_no_memory_findings(prog: MegakernelProgram) -> None:
    assert check_memory_safety(prog) == []


@given(valid_programs(max_tasks=12), st.data())
def test_never_raises_on_fuzzed_params(prog: MegakernelProgram, data: st.DataObject) -> None:
    for task in prog.tasks:
        edits = data.draw(PARAMS)
        drops = data.draw(st.sets(st.sampled_from(KEYS), max_size=3))
        task.params = {k: v for k, v in {**task.params, **edits}.items() if k not in drops}
    for d in check_memory_safety(prog):
        assert d.code.startswith("M4") and d.tasks


@given(valid_programs(max_tasks=12), st.data())
def test_never_raises_on_fuzzed_shapes(prog: MegakernelProgram, data: st.DataObject) -> None:
    for buf in prog.buffers:
        if data.draw(st.booleans()):
            buf.shape = tuple(data.draw(st.lists(st.integers(0, 9), max_size=5)))
    check_memory_safety(prog)


@given(valid_programs(max_tasks=6), RECIPES, st.data())
def test_never_raises_on_fuzzed_recipes(
    prog: MegakernelProgram, recipe: dict[str, Any], data: st.DataObject
) -> None:
    task = data.draw(st.sampled_from(prog.tasks))
    task.op = InstructionKind.FUSED
    task.params = {"recipe": recipe}
    found = check_memory_safety(prog)
    json.dumps([d.to_dict() for d in found])  # findings stay plain data
