"""The certificate checker's own regions: GEMM row claims (M401) and what a FUSED task writes.

A certificate rebound to a mutated program (its hash recomputed) must be refused whenever the
mutation breaks an obligation the checker covers (docs/guides/proofs.md); a valid program's own
certificate must still pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from amkspec.evidence.certificate import certify
from amkspec.evidence.certificate_check import CertificateRefused, check_certificate
from amkspec.ir import BufferKind, DType, MegakernelProgram, ProgramBuilder
from amkspec.ir import InstructionKind as K
from amkspec.proofs import validate
from tests.evidence.forge import forge, refused

# -- GEMM_TILE m_off / M_tile: the row part of M401 --------------------------------------------


def _gemm(shape: tuple[int, ...], rows: dict[str, int]) -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (*shape[:-1], 4))
    w = b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (4, 4))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, shape)
    params = {"M_tile": 1, "K": 4, "N_tile": 4, "n_off": 0, **rows}
    if "M_tile" not in rows:
        del params["M_tile"]
    b.add_task(K.GEMM_TILE, [x, w], [y], params=params, label="gemm")
    return b.build()


@pytest.mark.parametrize(
    "shape, rows",
    [
        ((2, 4), {"m_off": 1000, "M_tile": 5}),
        ((2, 4), {"m_off": -1, "M_tile": 1}),
        ((2, 4), {"m_off": 0, "M_tile": 0}),
        ((2, 4), {"m_off": 1, "M_tile": 2}),
        ((2, 4), {"M_tile": 3}),
        ((2, 3, 4), {"m_off": 5, "M_tile": 2}),  # rows = 2 * 3
        ((2, 4), {"m_off": 0, "M_tile": 2}),
        ((2, 4), {"m_off": 1, "M_tile": 1}),
        ((2, 4), {"M_tile": 2}),
        ((2, 3, 4), {"m_off": 4, "M_tile": 2}),
    ],
)
def test_gemm_row_claims_are_refused_exactly_when_m401_rejects(
    shape: tuple[int, ...], rows: dict[str, int]
) -> None:
    prog = _gemm(shape, rows)
    codes = validate(prog).codes
    rejected = bool(codes)
    assert set(codes) <= {"M401"}
    good = _gemm((2, 4), {"m_off": 0, "M_tile": 2})
    assert validate(good).ok
    assert refused(prog, certify(good)) is rejected
    assert refused(prog, forge(prog)) is rejected
    if not rejected:
        check_certificate(prog, certify(prog))


# -- FUSED: the written region comes from the recipe's final steps -----------------------------


def _tile_step(n_tile: int | None, n_off: int = 0, out: Any = "final") -> dict[str, Any]:
    params: dict[str, Any] = {"K": 16, "n_off": n_off}
    if n_tile is not None:
        params["N_tile"] = n_tile
    return {"op": int(K.GEMV_TILE), "args": [{"in": 0}, {"in": 1}], "params": params, "out": out}


def _operands(b: ProgramBuilder) -> tuple[int, int, int, int]:
    """``x`` (an input row of 16), ``w`` (16 × 16), ``h`` (an activation row) and ``y`` (the output)."""
    return (b.new_buffer("x", BufferKind.IO_INPUT, DType.F32, (1, 16)),
            b.new_buffer("w", BufferKind.WEIGHT, DType.F32, (16, 16)),
            b.new_buffer("h", BufferKind.ACTIVATION, DType.F32, (1, 16)),
            b.new_buffer("y", BufferKind.IO_OUTPUT, DType.F32, (1, 16)))


def _fused(*recipes: list[dict[str, Any]]) -> MegakernelProgram:
    """FUSED tasks (one per recipe) that write ``h``, all signalling one counter; a COPY reads ``h``."""
    b = ProgramBuilder()
    x, w, h, y = _operands(b)
    c = b.new_counter("f")
    for n, steps in enumerate(recipes):
        b.add_task(K.FUSED, [x, w], [h], out_counter=c, params={"recipe": {"steps": steps}}, label=f"f{n}")
    b.add_task(K.COPY, [h], [y], waits=[(c, len(recipes))], label="read_h")
    return b.build()


GOOD = _fused([_tile_step(16)])


@pytest.mark.parametrize(
    "prog",
    [
        _fused([_tile_step(8)]),  # the audit's case: columns [8, 16) written by no task
        _fused([_tile_step(4, 0)], [_tile_step(4, 8)]),  # two FUSED tiles leave [4, 8) and [12, 16)
        _fused([_tile_step(16, out=0), _tile_step(8)]),  # the full tile goes to a scratch
    ],
    ids=["half", "two-tiles-gap", "scratch-full"],
)
def test_a_fused_coverage_gap_refuses_a_rebound_certificate(prog: MegakernelProgram) -> None:
    assert "R308" in validate(prog).codes
    assert validate(GOOD).ok
    assert refused(prog, certify(GOOD))
    assert refused(prog, forge(prog))


@pytest.mark.parametrize(
    "prog",
    [
        GOOD,
        _fused([_tile_step(8, 0)], [_tile_step(8, 8)]),  # two FUSED tiles cover h together
        _fused([_tile_step(8, 0), _tile_step(8, 8, out=-1)]),  # two final steps of one recipe
    ],
    ids=["whole", "two-tasks", "two-finals"],
)
def test_fused_tiles_that_cover_keep_their_certificate(prog: MegakernelProgram) -> None:
    assert validate(prog).ok
    check_certificate(prog, certify(prog))


def test_a_fused_write_the_checker_cannot_bound_covers_nothing() -> None:
    """A tile step without its (required) N_tile is not bounded: it covers no element, so its
    reader is refused whatever the certificate."""
    prog = _fused([_tile_step(None)])
    assert not validate(prog).ok
    assert refused(prog, forge(prog))
    assert refused(prog, certify(GOOD))


def test_a_fused_write_the_checker_cannot_bound_still_orders_as_the_whole_buffer() -> None:
    """An unbounded FUSED write next to a COPY that covers ``h``: the two writers overlap (the
    FUSED one counts as the whole buffer), so without a path between them the checker refuses."""
    b = ProgramBuilder()
    x, w, h, y = _operands(b)
    c = b.new_counter("c")
    b.add_task(K.FUSED, [x, w], [h], out_counter=c, params={"recipe": {"steps": [_tile_step(None)]}})
    b.add_task(K.COPY, [x], [h], out_counter=c, label="cover")
    b.add_task(K.COPY, [h], [y], waits=[(c, 2)], label="read_h")
    prog = b.build()
    cert = forge(prog)
    with pytest.raises(CertificateRefused, match="write overlapping elements"):
        check_certificate(prog, cert)
