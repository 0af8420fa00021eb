/* Normalisation over the last dimension (spec §7; amkspec.semantics.norm): RMSNORM and
 * LAYERNORM. Rows are processed in chunks whose statistics fit the scratch work area. */
#ifndef AMK_OPS_NORM_CUH
#define AMK_OPS_NORM_CUH

#include "reduce.cuh"

/* RMSNORM: r = rsqrt(mean(x², last dim) + eps); value = (x · r) · w (broadcast), then cast;
 * a row whose mean of squares is not finite is NaN (§7.10 edge values) */
AMK_OP_FN int amk_op_rmsnorm(const amk_op_ctx& c) {
  amk_view x, w, out;
  int f = amk_input(c, 0, &x);
  if (f == 0) f = amk_input(c, 1, &w);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  amk_shape val;
  amk_store_map map;
  if (!amk_broadcast(x.s, w.s, &val) || !amk_store_plan(val, out.s, &map)) return AMK_FAULT_SHAPE;
  const float eps = amk_param_filled_f(c.ins, AMK_P_EPS);
  const int64_t h = x.s.rank ? x.s.d[x.s.rank - 1] : 1;
  const int64_t rows = h ? x.n / h : 0;
  const bool x_is_val = amk_same_shape(x.s, val);
  float* r = amk_work(c);
  const int64_t chunk = AMK_SMEM_WORK_FLOATS;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    amk_rows_reduce(c, r0, nr, h, r, AMK_RED_SUM, [&](int64_t row, int64_t j) {
      float v = amk_ld(x, row * h + j);
      return v * v;
    });
    AMK_FOR_THREADS(k, nr) {
      const float ms = r[k] / static_cast<float>(h);
      r[k] = amk_isfinite(ms) ? 1.0f / sqrtf(ms + eps) : amk_nan();
    }
    __syncthreads();
    AMK_FOR_THREADS(i, out.n) {
      int64_t vi = amk_value_index(map, i);
      int64_t xo = x_is_val ? vi : amk_bcast_offset(x.s, val, vi);
      int64_t row = xo / h;
      if (row < r0 || row >= r0 + nr) continue;
      float y = amk_ld(x, xo) * r[row - r0];
      amk_st(out, i, y * amk_ld(w, amk_bcast_offset(w.s, val, vi)));
    }
    __syncthreads();
  }
  return 0;
}

/* LAYERNORM: (x − mean) / sqrt(var + eps) · w (+ b), biased variance, over `hidden`; a row whose
 * mean or variance is not finite is NaN (§7.10 edge values) */
AMK_OP_FN int amk_op_layernorm(const amk_op_ctx& c) {
  amk_view x{}, w{}, b{}, out{};  /* b is read only when present: initialised for -Wmaybe-uninitialized */
  int f = amk_input(c, 0, &x);
  if (f == 0) f = amk_input(c, 1, &w);
  if (f == 0 && c.ins->n_inputs > 2) f = amk_input(c, 2, &b);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  const bool has_b = c.ins->n_inputs > 2;
  if (x.s.rank < 1) return AMK_FAULT_SHAPE;
  const int64_t h = amk_param_i(c.ins, AMK_P_HIDDEN, static_cast<int32_t>(x.s.d[x.s.rank - 1]));
  if (h <= 0 || x.s.d[x.s.rank - 1] != h) return AMK_FAULT_SHAPE;
  if (w.s.rank != 1 || w.s.d[0] != h || (has_b && (b.s.rank != 1 || b.s.d[0] != h))) return AMK_FAULT_SHAPE;
  amk_store_map map;
  if (!amk_store_plan(x.s, out.s, &map)) return AMK_FAULT_SHAPE;
  const float eps = amk_param_filled_f(c.ins, AMK_P_EPS);
  const int64_t rows = x.n / h;
  const int64_t chunk = AMK_SMEM_WORK_FLOATS / 2;
  float* mean = amk_work(c);
  float* rstd = mean + chunk;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    amk_rows_reduce(c, r0, nr, h, mean, AMK_RED_SUM, [&](int64_t row, int64_t j) { return amk_ld(x, row * h + j); });
    AMK_FOR_THREADS(k, nr) { mean[k] = mean[k] / static_cast<float>(h); }
    __syncthreads();
    amk_rows_reduce(c, r0, nr, h, rstd, AMK_RED_SUM, [&](int64_t row, int64_t j) {
      float d = amk_ld(x, row * h + j) - mean[row - r0];
      return d * d;
    });
    AMK_FOR_THREADS(k, nr) {
      const float var = rstd[k] / static_cast<float>(h);
      rstd[k] = amk_isfinite(var) ? 1.0f / sqrtf(var + eps) : amk_nan();
    }
    __syncthreads();
    AMK_FOR_THREADS(i, out.n) {
      int64_t xo = amk_value_index(map, i);
      int64_t row = xo / h, j = xo - row * h;
      if (row < r0 || row >= r0 + nr) continue;
      float y = (amk_ld(x, xo) - mean[row - r0]) * rstd[row - r0] * amk_ld(w, j);
      if (has_b) y += amk_ld(b, j);
      amk_st(out, i, y);
    }
    __syncthreads();
  }
  return 0;
}

#endif /* AMK_OPS_NORM_CUH */
