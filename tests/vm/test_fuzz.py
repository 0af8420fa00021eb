"""Any opcode on any operands and params ends in a result or a clean error, never a traceback."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.vm import BindingError, ExecutionError, ReferenceVM

DTYPES = [DType.F32, DType.F16, DType.BF16, DType.I32, DType.I8, DType.I4, DType.U8, DType.BOOL]
PARAMS = {
    "K": st.integers(-2, 9), "N_tile": st.integers(-2, 9), "n_off": st.integers(-3, 9),
    "hidden": st.integers(0, 9), "head_dim": st.integers(-1, 9), "n_heads": st.integers(-1, 5),
    "n_kv_heads": st.integers(-1, 5), "kv_start": st.integers(-2, 9), "kv_len": st.integers(-2, 9),
    "pos": st.integers(-2, 9), "qdtype": st.sampled_from([0, 6, 7]), "group": st.integers(-1, 9),
    "flags": st.integers(0, 3), "dim": st.integers(-3, 3), "eps": st.floats(allow_nan=True),
    "scale": st.floats(allow_nan=True), "theta": st.floats(allow_nan=True),
    "recipe": st.just({"steps": [{"op": 11, "args": [{"in": 0}, {"in": 0}], "out": "final"}]}),
}


@st.composite
def one_task(draw: st.DrawFn) -> MegakernelProgram:
    b = ProgramBuilder()
    shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)
    n_in = draw(st.integers(0, 4))
    inputs = [b.new_buffer(f"in{i}", draw(st.sampled_from([BufferKind.IO_INPUT, BufferKind.WEIGHT])),
                           draw(st.sampled_from(DTYPES)), draw(shapes)) for i in range(n_in)]
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, draw(st.sampled_from(DTYPES)), draw(shapes))
    params = draw(st.fixed_dictionaries({}, optional=PARAMS))
    b.add_task(draw(st.sampled_from(list(InstructionKind))), inputs, [out], params=params, label="fuzz")
    return b.build()


def _zeros(program: MegakernelProgram, kind: BufferKind) -> dict[str, object]:
    from amkspec.semantics import empty_storage

    return {b.name: empty_storage(b) for b in program.buffers if b.kind is kind}


@given(one_task())
def test_any_task_runs_or_fails_cleanly(program: MegakernelProgram) -> None:
    vm = ReferenceVM(program, _unsafe_skip_validation=True)
    try:
        vm.run(_zeros(program, BufferKind.WEIGHT), _zeros(program, BufferKind.IO_INPUT))
    except (ExecutionError, BindingError) as exc:
        assert "fuzz" in str(exc) or isinstance(exc, BindingError)
