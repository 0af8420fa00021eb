"""GEMV_TILE and GEMM_TILE: one shared tile routine, fp or weight-only quantized (spec §7).

Weights are ``[N_out, K_in]`` (``nn.Linear`` layout); a tile computes
``x @ W[n_off:n_off+N_tile].T`` in float32 for **all** rows of ``x`` and writes
the column slice ``out[..., n_off:n_off+N_tile]``.
"""

from __future__ import annotations

from amkspec.ir import DType, InstructionKind
from amkspec.semantics.quant import dequant_rows
from amkspec.semantics.registry import OpError, Params, Tensor, arity, f32, int_param, semantics, store

_K = InstructionKind
QUANT_CODES = (int(DType.I8), int(DType.I4))

_DOC = dict(
    family="Linear",
    inputs="x [M, K], W [N, K], optional bias [N]; quantized: x, qW, scales [N, n_groups] "
    "(affine: (scale, offset) pairs [N, n_groups, 2])",
    outputs="out [M, N] (tile columns only)",
    shapes="n_off + N_tile ≤ N; quantized qW is [N, K] (I8) or packed [N, ceil(K/2)] (I4, low nibble = "
    "even column)",
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
    if x.dim() == 0 or inputs[1].dim() == 0 or out.dim() == 0:
        raise OpError("x, W and out must each have at least one dimension")
    n_off = int_param(params, "n_off", _K.GEMV_TILE, 0)
    if int_param(params, "qdtype", _K.GEMV_TILE, 0) in QUANT_CODES and len(inputs) >= 3:
        n_tile = int_param(params, "N_tile", _K.GEMV_TILE, inputs[2].shape[0])
        k = int_param(params, "K", _K.GEMV_TILE, x.shape[-1])
        tile = _matmul(x, dequant_rows(inputs[1:], params, n_off, n_tile, k))
    else:
        n_tile = int_param(params, "N_tile", _K.GEMV_TILE, inputs[1].shape[0])
        w = f32(inputs[1][n_off : n_off + n_tile])
        if w.shape[0] != n_tile or n_off < 0:
            raise OpError(f"tile rows {n_off}..{n_off + n_tile - 1} outside W {tuple(inputs[1].shape)}")
        tile = _matmul(x, w)
        if len(inputs) > 2:
            tile = _add_bias(tile, inputs[2], n_off, n_tile)
    if n_off < 0 or n_off + n_tile > out.shape[-1]:
        raise OpError(f"tile columns {n_off}..{n_off + n_tile - 1} outside an output {out.shape[-1]} wide")
    store(out[..., n_off : n_off + n_tile], tile)


def _add_bias(tile: Tensor, bias: Tensor, n_off: int, n_tile: int) -> Tensor:
    """``tile + bias[n_off : n_off+N_tile]``, the fp path's bias."""
    try:
        return tile + f32(bias[n_off : n_off + n_tile])
    except RuntimeError as exc:
        cols = f"columns {n_off}..{n_off + n_tile - 1}"
        raise OpError(f"bias {tuple(bias.shape)} does not cover the tile's {cols}") from exc


gemv_tile = semantics(
    _K.GEMV_TILE,
    params="K: not read on the fp path (W's width is used), the number of dequantized columns on the "
    "quantized path (default x's last dim); N_tile = N; n_off = 0; qdtype ∈ {6 I8, 7 I4} with 3 inputs "
    "selects the quantized path; group = K; flags bit 2 (AFFINE, extension): w = level · scale + offset",
    formula="out[..., n_off:n_off+N_tile] = x @ W[n_off:n_off+N_tile].T (+ bias), float32, then cast",
    **_DOC,
)(linear_tile)

gemm_tile = semantics(
    _K.GEMM_TILE,
    params="as GEMV_TILE; M_tile and m_off are not read",
    formula="identical to GEMV_TILE for every row of x",
    **_DOC,
)(linear_tile)
