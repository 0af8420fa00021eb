/* Block-wide reductions through ctx.smem (spec §8.5: ops share data only through the
 * block's scratch, behind __syncthreads()). Every thread of the block must call them.
 *
 * Scratch layout (AMK_OP_SMEM_BYTES = 32 KiB):
 *   [0, 4 KiB)      float  per-thread reduction slots
 *   [4, 12 KiB)     int64  per-thread index slots (argmax)
 *   [12, 32 KiB)    float  work area (per-row statistics, attention scores and accumulators)
 */
#ifndef AMK_OPS_REDUCE_CUH
#define AMK_OPS_REDUCE_CUH

#include "dtype.cuh"

#define AMK_SMEM_RED_F_OFF 0
#define AMK_SMEM_RED_I_OFF (AMK_OP_MAX_THREADS * 4)
#define AMK_SMEM_WORK_OFF (AMK_OP_MAX_THREADS * 12)
#define AMK_SMEM_WORK_FLOATS ((AMK_OP_SMEM_BYTES - AMK_SMEM_WORK_OFF) / 4)

AMK_DEV float* amk_red_f(const amk_op_ctx& c) { return reinterpret_cast<float*>(c.smem + AMK_SMEM_RED_F_OFF); }
AMK_DEV int64_t* amk_red_i(const amk_op_ctx& c) { return reinterpret_cast<int64_t*>(c.smem + AMK_SMEM_RED_I_OFF); }
AMK_DEV float* amk_work(const amk_op_ctx& c) { return reinterpret_cast<float*>(c.smem + AMK_SMEM_WORK_OFF); }

AMK_DEV int amk_pow2_ceil(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

enum amk_red_op { AMK_RED_SUM, AMK_RED_MAX };

/* tree reduction of one float per thread; the result is returned to every thread */
AMK_DEV float amk_block_reduce(const amk_op_ctx& c, float v, amk_red_op op) {
  float* red = amk_red_f(c);
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  red[t] = v;
  __syncthreads();
  for (int off = amk_pow2_ceil(n) / 2; off > 0; off >>= 1) {
    if (t < off && t + off < n) {
      float a = red[t], b = red[t + off];
      red[t] = op == AMK_RED_SUM ? a + b : (b > a || amk_isnan(b) ? b : a);
    }
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

AMK_DEV float amk_block_sum(const amk_op_ctx& c, float v) { return amk_block_reduce(c, v, AMK_RED_SUM); }
AMK_DEV float amk_block_max(const amk_op_ctx& c, float v) { return amk_block_reduce(c, v, AMK_RED_MAX); }

/* torch.argmax order: NaN beats everything, then the larger value, then the lower index.
 * An index < 0 marks "no candidate". */
AMK_DEV bool amk_argmax_better(float v, int64_t i, float bv, int64_t bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  bool vn = amk_isnan(v), bn = amk_isnan(bv);
  if (vn != bn) return vn;
  if (!vn && v != bv) return v > bv;
  return i < bi;
}

/* block argmax of one (value, index) candidate per thread; the winner's index to every thread */
AMK_DEV int64_t amk_block_argmax(const amk_op_ctx& c, float v, int64_t i) {
  float* rv = amk_red_f(c);
  int64_t* ri = amk_red_i(c);
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  rv[t] = v;
  ri[t] = i;
  __syncthreads();
  for (int off = amk_pow2_ceil(n) / 2; off > 0; off >>= 1) {
    if (t < off && t + off < n && amk_argmax_better(rv[t + off], ri[t + off], rv[t], ri[t])) {
      rv[t] = rv[t + off];
      ri[t] = ri[t + off];
    }
    __syncthreads();
  }
  int64_t r = ri[0];
  __syncthreads();
  return r;
}

/* dst[k] = reduction over j < len of term(r0 + k, j) for the rows k < nrows (nrows fits the
 * work area). Many rows: one thread per row; few rows: the block reduces each row.
 * Ends with a barrier, so every thread may read dst afterwards. */
template <class Term>
AMK_DEV void amk_rows_reduce(const amk_op_ctx& c, int64_t r0, int64_t nrows, int64_t len, float* dst,
                             amk_red_op op, Term term) {
  const float init = op == AMK_RED_SUM ? 0.0f : -amk_inf();
  if (nrows >= static_cast<int64_t>(blockDim.x)) {
    AMK_FOR_THREADS(k, nrows) {
      float a = init;
      for (int64_t j = 0; j < len; ++j) {
        float b = term(r0 + k, j);
        a = op == AMK_RED_SUM ? a + b : (b > a || amk_isnan(b) ? b : a);
      }
      dst[k] = a;
    }
  } else {
    for (int64_t k = 0; k < nrows; ++k) {
      float a = init;
      AMK_FOR_THREADS(j, len) {
        float b = term(r0 + k, j);
        a = op == AMK_RED_SUM ? a + b : (b > a || amk_isnan(b) ? b : a);
      }
      float total = amk_block_reduce(c, a, op);
      if (threadIdx.x == 0) dst[k] = total;
    }
  }
  __syncthreads();
}

#endif /* AMK_OPS_REDUCE_CUH */
