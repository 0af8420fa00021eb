/* GEMV_TILE and GEMM_TILE: one tile routine, floating point or weight-only quantized
 * (spec §7; amkspec.semantics.linear). Weights are [N_out, K_in]; a tile computes
 * x @ W[n_off:n_off+N_tile].T (+ bias) in float32 for every row of x and writes the column
 * slice out[..., n_off:n_off+N_tile]. Quantized iff qdtype ∈ {I8, I4} with ≥ 3 inputs:
 * [x, qW, scales(, zeros)], no bias; flags QUANT_AFFINE: [x, qW, (scale, offset) pairs [N, g, 2]].
 * M_tile / m_off are not read.
 */
#ifndef AMK_OPS_LINEAR_CUH
#define AMK_OPS_LINEAR_CUH

#include "quant.cuh"
#include "reduce.cuh"

struct amk_tile {
  amk_view x, w, bias, out;
  amk_qtable qt;
  bool quant, has_bias, bias_scalar;
  int64_t k, n_off, n_tile, x_rows, out_rows, out_cols;
  amk_shape x_lead, out_lead; /* leading dims (everything but the last) */
};

AMK_DEV float amk_tile_w(const amk_tile& t, int64_t col, int64_t kk) {
  const int64_t row = t.n_off + col;
  return t.quant ? amk_dequant(t.qt, row, kk) : amk_ld(t.w, row * t.k + kk);
}

AMK_DEV float amk_tile_dot(const amk_tile& t, int64_t xr, int64_t col, int64_t k0, int64_t step) {
  float s = 0.0f;
  for (int64_t kk = k0; kk < t.k; kk += step) s += amk_ld(t.x, xr * t.k + kk) * amk_tile_w(t, col, kk);
  return s;
}

/* write tile element (xr, col) to every out row it lands on (reshape: one; broadcast: all) */
AMK_DEV void amk_tile_store(const amk_tile& t, int64_t xr, int64_t col, float v) {
  if (t.has_bias) v = v + amk_ld(t.bias, t.n_off + (t.bias_scalar ? 0 : col));
  const int64_t c = t.n_off + col;
  if (t.x_rows == t.out_rows) {
    amk_st(t.out, xr * t.out_cols + c, v);
    return;
  }
  for (int64_t orow = 0; orow < t.out_rows; ++orow)
    if (amk_bcast_offset(t.x_lead, t.out_lead, orow) == xr) amk_st(t.out, orow * t.out_cols + c, v);
}

AMK_DEV int amk_tile_setup(const amk_op_ctx& c, amk_tile* t) {
  const amk_instruction_t* ins = c.ins;
  int f = amk_input(c, 0, &t->x);
  if (f == 0) f = amk_input(c, 1, &t->w);
  if (f == 0) f = amk_output(c, 0, &t->out);
  if (f) return f;
  const int32_t qdtype = amk_param_i(ins, AMK_P_QDTYPE, 0);
  t->quant = (qdtype == AMK_DT_I8 || qdtype == AMK_DT_I4) && ins->n_inputs >= 3;
  t->has_bias = !t->quant && ins->n_inputs > 2;
  t->bias_scalar = false;
  t->n_off = amk_param_i(ins, AMK_P_N_OFF, 0);
  if (t->x.s.rank < 1 || t->out.s.rank < 1) return AMK_FAULT_SHAPE;
  const int64_t x_k = t->x.s.d[t->x.s.rank - 1];
  if (t->quant) {
    amk_qtable& q = t->qt;
    q.q = t->w;
    f = amk_input(c, 2, &q.scales);
    q.has_zeros = ins->n_inputs > 3;
    q.affine = (amk_param_i(ins, AMK_P_FLAGS, 0) & AMK_FLAG_QUANT_AFFINE) != 0;
    if (f == 0 && q.has_zeros) f = amk_input(c, 3, &q.zeros);
    if (f) return f;
    if (q.q.s.rank != 2 || (q.has_zeros && q.zeros.s.rank != 2)) return AMK_FAULT_SHAPE;
    if (q.affine ? q.has_zeros || q.scales.s.rank != 3 || q.scales.s.d[2] != 2 : q.scales.s.rank != 2)
      return AMK_FAULT_SHAPE;
    t->k = amk_param_i(ins, AMK_P_K, static_cast<int32_t>(x_k));
    t->n_tile = amk_param_i(ins, AMK_P_N_TILE, static_cast<int32_t>(q.scales.s.d[0]));
    q.group = amk_param_i(ins, AMK_P_GROUP, static_cast<int32_t>(t->k));
    q.nibbles = qdtype == AMK_DT_I4;
    q.q_cols = q.q.s.d[1];
    q.s_cols = q.scales.s.d[1];
    q.z_cols = q.has_zeros ? q.zeros.s.d[1] : 0;
    const int64_t end = t->n_off + t->n_tile;
    if (t->n_off < 0 || t->n_tile < 0 || end > q.q.s.d[0] || end > q.scales.s.d[0]) return AMK_FAULT_SHAPE;
    if (q.has_zeros && end > q.zeros.s.d[0]) return AMK_FAULT_SHAPE;
    if (!amk_qtable_fits(q, t->k) || x_k != t->k) return AMK_FAULT_SHAPE;
  } else {
    if (t->w.s.rank != 2) return AMK_FAULT_SHAPE;
    t->k = t->w.s.d[1];
    t->n_tile = amk_param_i(ins, AMK_P_N_TILE, static_cast<int32_t>(t->w.s.d[0]));
    if (t->n_off < 0 || t->n_tile < 0 || t->n_off + t->n_tile > t->w.s.d[0] || x_k != t->k) return AMK_FAULT_SHAPE;
    if (t->has_bias) {
      f = amk_input(c, 2, &t->bias);
      if (f) return f;
      if (t->bias.s.rank != 1) return AMK_FAULT_SHAPE;
      int64_t blen = t->bias.s.d[0] - t->n_off;
      blen = blen < 0 ? 0 : (blen > t->n_tile ? t->n_tile : blen);
      t->bias_scalar = blen == 1 && t->n_tile != 1;
      if (blen != t->n_tile && !t->bias_scalar) return AMK_FAULT_SHAPE;
    }
  }
  t->out_cols = t->out.s.d[t->out.s.rank - 1];
  if (t->n_off + t->n_tile > t->out_cols) return AMK_FAULT_SHAPE;
  t->x_lead = t->x.s;
  t->x_lead.rank -= 1;
  t->out_lead = t->out.s;
  t->out_lead.rank -= 1;
  t->x_rows = amk_numel(t->x_lead);
  t->out_rows = amk_numel(t->out_lead);
  if (t->n_tile > 0 && t->x_rows != t->out_rows && !amk_expands_to(t->x_lead, t->out_lead)) return AMK_FAULT_SHAPE;
  return 0;
}

#include "gemv.cuh"

/* GEMV_TILE / GEMM_TILE. Up to AMK_GEMV_MAX_ROWS rows of x: one warp per column (gemv.cuh). Else, many (row, column) pairs: one thread per pair. Few (decode): groups of
 * g threads (g ≥ a warp where the block allows, so consecutive threads read consecutive weights)
 * split K for one pair and sum their partials in a fixed order; the groups take the pairs in
 * passes. */
AMK_DEV int amk_linear_pairs(const amk_op_ctx& c, const amk_tile& t);

AMK_OP_FN int amk_op_linear_tile(const amk_op_ctx& c) {
  amk_tile t;
  int f = amk_tile_setup(c, &t);
  if (f) return f;
  if (amk_gemv_fast(c, t)) return 0;
  return amk_linear_pairs(c, t);
}

/* the general tile loop (see amk_op_linear_tile) */
AMK_DEV int amk_linear_pairs(const amk_op_ctx& c, const amk_tile& t) {
  const int64_t pairs = t.x_rows * t.n_tile;
  const int64_t nt = blockDim.x;
  if (pairs >= nt) {
    AMK_FOR_THREADS(p, pairs) {
      int64_t xr = p / t.n_tile, col = p - xr * t.n_tile;
      amk_tile_store(t, xr, col, amk_tile_dot(t, xr, col, 0, 1));
    }
    return 0;
  }
  float* red = amk_red_f(c);
  const int64_t warp = nt < 32 ? nt : 32;
  const int64_t g = pairs > 0 && nt / pairs > warp ? nt / pairs : warp;
  const int64_t groups = nt / g;
  const int64_t tid = threadIdx.x, q = tid / g, lane = tid - q * g;
  for (int64_t p0 = 0; p0 < pairs; p0 += groups) {
    const int64_t p = p0 + q;
    const bool mine = q < groups && p < pairs;
    const int64_t xr = mine ? p / t.n_tile : 0, col = mine ? p - xr * t.n_tile : 0;
    red[tid] = mine ? amk_tile_dot(t, xr, col, lane, g) : 0.0f;
    __syncthreads();
    if (mine && lane == 0) {
      float s = 0.0f;
      for (int64_t l = 0; l < g; ++l) s += red[tid + l];
      amk_tile_store(t, xr, col, s);
    }
    __syncthreads();
  }
  return 0;
}

#endif /* AMK_OPS_LINEAR_CUH */
