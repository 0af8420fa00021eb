"""GEMV_TILE and GEMM_TILE: one shared tile routine, fp or weight-only quantized (spec §7).

Weights are ``[N_out, K_in]`` (``nn.Linear`` layout); a tile computes
``x @ W[n_off:n_off+N_tile].T`` in float32 for **all** rows of ``x`` and writes
the column slice ``out[..., n_off:n_off+N_tile]``.
"""

from __future__ import annotations

from amkspec.ir import DType, InstructionKind
from amkspec.semantics.quant import dequant_rows
from amkspec.semantics.registry import OpError, Params, Tensor, arity, f32, semantics, store

_K = InstructionKind
QUANT_CODES = (int(DType.I8), int(DType.I4))

_DOC = dict(
    family="Linear",
    inputs="x [M, K], W [N, K], optional bias [N]; quantized: x, qW, scales [N, n_groups]",
    outputs="out [M, N] (tile columns only)",
    shapes="n_off + N_tile ≤ N; quantized I4 qW is packed [N, ceil(K/2)] (low nibble = even column)",
)


def _matmul(x: Tensor, w: Tensor) -> Tensor:
    if w.dim() != 2:
        raise OpError(f"the weight tile must be [N_tile, K], got {tuple(w.shape)}")
    try:
        return x @ w.T
    except RuntimeError as exc:
        raise OpError(f"x {tuple(x.shape)} does not match W tile {tuple(w.shape)}") from exc


def linear_tile(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """The shared GEMV/GEMM tile routine (ignores ``M_tile``/``m_off``: all rows are written)."""
    arity(inputs, outputs, _K.GEMV_TILE, 2, 1)
    x, out = f32(inputs[0]), outputs[0]
    n_off = int(params.get("n_off", 0))
    if int(params.get("qdtype", 0)) in QUANT_CODES and len(inputs) >= 3:
        n_tile = int(params.get("N_tile", inputs[2].shape[0]))
        w = dequant_rows(inputs[1:], params, n_off, n_tile, int(params.get("K", x.shape[-1])))
        tile = _matmul(x, w)
    else:
        n_tile = int(params.get("N_tile", inputs[1].shape[0]))
        w = f32(inputs[1][n_off : n_off + n_tile])
        if w.shape[0] != n_tile or n_off < 0:
            raise OpError(f"tile rows {n_off}..{n_off + n_tile - 1} outside W {tuple(inputs[1].shape)}")
        tile = _matmul(x, w)
        if len(inputs) > 2:
            tile = tile + f32(inputs[2][n_off : n_off + n_tile])
    if n_off < 0 or n_off + n_tile > out.shape[-1]:
        raise OpError(f"tile columns {n_off}..{n_off + n_tile - 1} outside an output {out.shape[-1]} wide")
    store(out[..., n_off : n_off + n_tile], tile)


gemv_tile = semantics(
    _K.GEMV_TILE,
    params="K (W's width is used); N_tile = N; n_off = 0; qdtype ∈ {6 I8, 7 I4} with 3 inputs selects "
    "the quantized path; group = K",
    formula="out[..., n_off:n_off+N_tile] = x @ W[n_off:n_off+N_tile].T (+ bias), float32, then cast",
    **_DOC,
)(linear_tile)

gemm_tile = semantics(
    _K.GEMM_TILE,
    params="as GEMV_TILE; M_tile and m_off are not read",
    formula="identical to GEMV_TILE for every row of x",
    **_DOC,
)(linear_tile)
