/* Elementwise ops and reductions across inputs (spec §7; amkspec.semantics.elementwise):
 * SILU_MUL, GELU, ADD, MUL, SOFTMAX, ALLREDUCE_SHARD, SAMPLE_ARGMAX. Inputs broadcast as in
 * torch; the float32 result is stored with amkspec's `store` rule (reshape or broadcast). */
#ifndef AMK_OPS_ELEMENTWISE_CUH
#define AMK_OPS_ELEMENTWISE_CUH

#include "reduce.cuh"

enum amk_binary { AMK_BIN_ADD, AMK_BIN_MUL, AMK_BIN_SILU_MUL };

/* SiLU g · sigmoid(g), with its limits (§7.10 edge values): +inf at +inf, 0 at −inf, NaN at NaN */
AMK_DEV float amk_silu(float g) { return g == -amk_inf() ? 0.0f : g / (1.0f + expf(-g)); }

AMK_DEV int amk_binary_op(const amk_op_ctx& c, amk_binary op) {
  amk_view a, b, out;
  int f = amk_input(c, 0, &a);
  if (f == 0) f = amk_input(c, 1, &b);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  amk_shape val;
  amk_store_map map;
  if (!amk_broadcast(a.s, b.s, &val) || !amk_store_plan(val, out.s, &map)) return AMK_FAULT_SHAPE;
  AMK_FOR_THREADS(i, out.n) {
    int64_t vi = amk_value_index(map, i);
    float x = amk_ld(a, amk_bcast_offset(a.s, val, vi)), y = amk_ld(b, amk_bcast_offset(b.s, val, vi));
    float r = op == AMK_BIN_ADD ? x + y : (op == AMK_BIN_MUL ? x * y : amk_silu(x) * y);
    amk_st(out, i, r);
  }
  return 0;
}

AMK_OP_FN int amk_op_silu_mul(const amk_op_ctx& c) { return amk_binary_op(c, AMK_BIN_SILU_MUL); }
AMK_OP_FN int amk_op_add(const amk_op_ctx& c) { return amk_binary_op(c, AMK_BIN_ADD); }

/* GELU, exact erf form x·0.5·(1 + erf(x/√2)), with its limits (§7.10 edge values): +inf at +inf,
 * 0 at −inf, NaN at NaN */
AMK_DEV float amk_gelu(float x) {
  if (x == -amk_inf()) return 0.0f;
  return x * 0.5f * (1.0f + erff(x * 0.70710678118654752f));
}

/* one input: out = a · scale (scale: PARAM_DEFAULTS, filled by the packer); unary GELU */
AMK_DEV int amk_unary_op(const amk_op_ctx& c, bool gelu) {
  amk_view a, out;
  int f = amk_input(c, 0, &a);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  amk_store_map map;
  if (!amk_store_plan(a.s, out.s, &map)) return AMK_FAULT_SHAPE;
  const float scale = amk_param_filled_f(c.ins, AMK_P_SCALE);
  AMK_FOR_THREADS(i, out.n) {
    float x = amk_ld(a, amk_value_index(map, i));
    amk_st(out, i, gelu ? amk_gelu(x) : x * scale);
  }
  return 0;
}

AMK_OP_FN int amk_op_gelu(const amk_op_ctx& c) { return amk_unary_op(c, true); }

AMK_OP_FN int amk_op_mul(const amk_op_ctx& c) {
  return c.ins->n_inputs > 1 ? amk_binary_op(c, AMK_BIN_MUL) : amk_unary_op(c, false);
}

/* ALLREDUCE_SHARD: ((s0 + s1) + s2) + … in input order, all broadcast together */
AMK_OP_FN int amk_op_allreduce_shard(const amk_op_ctx& c) {
  amk_view in[AMK_MAX_INPUTS], out;
  const int n = c.ins->n_inputs;
  if (n < 1 || n > AMK_MAX_INPUTS) return AMK_FAULT_OPERAND;
  int f = amk_output(c, 0, &out);
  for (int k = 0; k < n && f == 0; ++k) f = amk_input(c, k, &in[k]);
  if (f) return f;
  amk_shape val = in[0].s;
  for (int k = 1; k < n; ++k)
    if (!amk_broadcast(val, in[k].s, &val)) return AMK_FAULT_SHAPE;
  amk_store_map map;
  if (!amk_store_plan(val, out.s, &map)) return AMK_FAULT_SHAPE;
  AMK_FOR_THREADS(i, out.n) {
    int64_t vi = amk_value_index(map, i);
    float acc = amk_ld(in[0], amk_bcast_offset(in[0].s, val, vi));
    for (int k = 1; k < n; ++k) acc = acc + amk_ld(in[k], amk_bcast_offset(in[k].s, val, vi));
    amk_st(out, i, acc);
  }
  return 0;
}

/* SOFTMAX along `dim` (default −1): exp(x − max) / Σ exp(x − max) */
AMK_OP_FN int amk_op_softmax(const amk_op_ctx& c) {
  amk_view x, out;
  int f = amk_input(c, 0, &x);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  const int rank = x.s.rank > 1 ? x.s.rank : 1;
  int dim = amk_param_filled_i(c.ins, AMK_P_DIM);
  if (dim < -rank || dim >= rank) return AMK_FAULT_PARAM;
  if (dim < 0) dim += rank;
  amk_store_map map;
  if (!amk_store_plan(x.s, out.s, &map)) return AMK_FAULT_SHAPE;
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < x.s.rank; ++d) {
    if (d < dim) outer *= x.s.d[d];
    else if (d == dim) len = x.s.d[d];
    else inner *= x.s.d[d];
  }
  const int64_t lines = outer * inner;
  const int64_t chunk = AMK_SMEM_WORK_FLOATS / 2;
  float* mx = amk_work(c);
  float* sum = mx + chunk;
  auto at = [&](int64_t line, int64_t j) {
    int64_t o = line / inner, in = line - o * inner;
    return (o * len + j) * inner + in;
  };
  for (int64_t l0 = 0; l0 < lines; l0 += chunk) {
    const int64_t nl = lines - l0 < chunk ? lines - l0 : chunk;
    amk_rows_reduce(c, l0, nl, len, mx, AMK_RED_MAX, [&](int64_t line, int64_t j) { return amk_ld(x, at(line, j)); });
    amk_rows_reduce(c, l0, nl, len, sum, AMK_RED_SUM,
                    [&](int64_t line, int64_t j) { return expf(amk_ld(x, at(line, j)) - mx[line - l0]); });
    AMK_FOR_THREADS(i, out.n) {
      int64_t xo = amk_value_index(map, i);
      int64_t o = xo / (len * inner), in = xo % inner;
      int64_t line = o * inner + in;
      if (line < l0 || line >= l0 + nl) continue;
      amk_st(out, i, expf(amk_ld(x, xo) - mx[line - l0]) / sum[line - l0]);
    }
    __syncthreads();
  }
  return 0;
}

/* SAMPLE_ARGMAX: argmax over the last dim (NaN first, ties → lowest index), stored as an integer */
AMK_OP_FN int amk_op_sample_argmax(const amk_op_ctx& c) {
  amk_view x, out;
  int f = amk_input(c, 0, &x);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  if (x.n == 0) return AMK_FAULT_SHAPE;
  amk_shape val = x.s;
  if (val.rank > 0) val.rank -= 1;
  amk_store_map map;
  if (!amk_store_plan(val, out.s, &map)) return AMK_FAULT_SHAPE;
  const int64_t len = x.s.rank ? x.s.d[x.s.rank - 1] : 1;
  const int64_t rows = x.n / len;
  const int64_t chunk = AMK_SMEM_WORK_FLOATS / 2;
  int64_t* best = reinterpret_cast<int64_t*>(amk_work(c));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    if (nr >= static_cast<int64_t>(blockDim.x)) {
      AMK_FOR_THREADS(k, nr) {
        int64_t bi = 0;
        float bv = amk_ld(x, (r0 + k) * len);
        for (int64_t j = 1; j < len; ++j) {
          float v = amk_ld(x, (r0 + k) * len + j);
          if (amk_argmax_better(v, j, bv, bi)) { bv = v; bi = j; }
        }
        best[k] = bi;
      }
    } else {
      for (int64_t k = 0; k < nr; ++k) {
        int64_t bi = -1;
        float bv = 0.0f;
        AMK_FOR_THREADS(j, len) {
          float v = amk_ld(x, (r0 + k) * len + j);
          if (amk_argmax_better(v, j, bv, bi)) { bv = v; bi = j; }
        }
        int64_t win = amk_block_argmax(c, bv, bi);
        if (threadIdx.x == 0) best[k] = win;
      }
    }
    __syncthreads();
    AMK_FOR_THREADS(i, out.n) {
      int64_t row = amk_value_index(map, i);
      if (row < r0 || row >= r0 + nr) continue;
      amk_st_d(out, i, static_cast<double>(best[row - r0]));
    }
    __syncthreads();
  }
  return 0;
}

#endif /* AMK_OPS_ELEMENTWISE_CUH */
