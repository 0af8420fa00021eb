/* Bandwidth-shaped GEMV / GEMM tiles (spec §7 numerics, §8.7 kernel design), used by
 * amk_op_linear_tile (linear.cuh) whenever the tile fits them; the thread-per-pair loop there
 * stays the general path (and the definition both are tested against).
 *
 *   - x (up to AMK_GEMV_MAX_ROWS rows) is converted to float32 once and staged in shared
 *     memory, in K chunks when it does not fit (partial sums then kept in shared memory);
 *   - one warp per output column: each lane reads 16 bytes of the weight row at a time
 *     (LDG.E.128, AMK_GEMV_UNROLL loads in flight), consecutive lanes consecutive 16 bytes, so a
 *     warp reads 512 contiguous bytes per step; the lane sums are reduced with shuffles;
 *   - the weight dtype is a template parameter: no dtype switch inside the loop;
 *   - int8 / int4 weights (quant.cuh's table): each 16-byte load is 16 int8 or 32 int4 levels,
 *     every byte read once, one scale (and zero) per load (the group spans whole loads).
 * Row starts must be 16-byte aligned (K · element bytes a multiple of 16); otherwise the lanes
 * read element by element, still one warp per column.
 */
#ifndef AMK_OPS_GEMV_CUH
#define AMK_OPS_GEMV_CUH

#include "quant.cuh"
#include "reduce.cuh"

#define AMK_GEMV_ROWS 4      /* x rows one pass over a weight row serves (registers per lane); decode: 1 */
#define AMK_GEMV_UNROLL 4    /* 16-byte weight loads in flight per lane */
#define AMK_GEMV_MAX_ROWS 64 /* more rows (a prefill GEMM): the thread-per-pair path */

#ifdef __CUDACC__
#define AMK_UNROLL _Pragma("unroll")
#else
#define AMK_UNROLL
#endif

/* f16 bits -> float32: the cvt instruction on the GPU (exact), the portable conversion on the CPU */
AMK_DEV float amk_h2f(uint32_t bits) {
#ifdef __CUDACC__
  float f;
  const unsigned short h = static_cast<unsigned short>(bits & 0xffffu);
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return amk_half_to_f32(static_cast<uint16_t>(bits & 0xffffu));
#endif
}

/* a weight element type known at compile time: elements per 16 bytes, one element, a 16-byte unpack */
template <int DT>
struct amk_wtype;

template <>
struct amk_wtype<AMK_DT_F32> {
  static constexpr int per = 4, bytes = 4;
  AMK_DEV static float at(const unsigned char* p, int64_t i) { return reinterpret_cast<const float*>(p)[i]; }
  AMK_DEV static void unpack(const amk_u128& q, float* w) {
    w[0] = amk_u2f(q.x), w[1] = amk_u2f(q.y), w[2] = amk_u2f(q.z), w[3] = amk_u2f(q.w);
  }
};

template <>
struct amk_wtype<AMK_DT_BF16> {
  static constexpr int per = 8, bytes = 2;
  AMK_DEV static float at(const unsigned char* p, int64_t i) {
    return amk_bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  }
  AMK_DEV static void pair(uint32_t u, float* w) { w[0] = amk_u2f(u << 16), w[1] = amk_u2f(u & 0xffff0000u); }
  AMK_DEV static void unpack(const amk_u128& q, float* w) { pair(q.x, w), pair(q.y, w + 2), pair(q.z, w + 4), pair(q.w, w + 6); }
};

template <>
struct amk_wtype<AMK_DT_F16> {
  static constexpr int per = 8, bytes = 2;
  AMK_DEV static float at(const unsigned char* p, int64_t i) { return amk_h2f(reinterpret_cast<const uint16_t*>(p)[i]); }
  AMK_DEV static void pair(uint32_t u, float* w) { w[0] = amk_h2f(u), w[1] = amk_h2f(u >> 16); }
  AMK_DEV static void unpack(const amk_u128& q, float* w) { pair(q.x, w), pair(q.y, w + 2), pair(q.z, w + 4), pair(q.w, w + 6); }
};

/* s[r] += Σ_e w[e] · x[r·kc + e] for the rows r < nr ≤ R (x: staged rows in shared memory, kc
 * floats apart, read 4 at a time when PER is a multiple of 4) */
template <int PER, int R>
AMK_DEV void amk_gemv_fma(const float* w, const float* x, int kc, int nr, float* s) {
  AMK_UNROLL
  for (int r = 0; r < R; ++r) {
    if (r < nr) {
      const float* xr = x + r * kc;
      float a = s[r];
      if constexpr (PER % 4 == 0) {
        AMK_UNROLL
        for (int e = 0; e < PER; e += 4) {
          const amk_f4 v = amk_lds128(xr + e);
          a += w[e] * v.x;
          a += w[e + 1] * v.y;
          a += w[e + 2] * v.z;
          a += w[e + 3] * v.w;
        }
      } else {
        AMK_UNROLL
        for (int e = 0; e < PER; ++e) a += w[e] * xr[e];
      }
      s[r] = a;
    }
  }
}

/* one lane's share of a weight row chunk (kc elements from wrow) against the staged x rows */
template <int DT, int R>
AMK_DEV void amk_gemv_lane(const unsigned char* wrow, const float* x, int kc, int nr, bool vec, float* s) {
  using W = amk_wtype<DT>;
  const int lane = amk_lane(), lanes = amk_warp_lanes();
  float w[W::per];
  int done = 0;
  if (vec) {
    const int nvec = kc / W::per;
    int v = lane;
    for (; v + (AMK_GEMV_UNROLL - 1) * lanes < nvec; v += AMK_GEMV_UNROLL * lanes) {
      amk_u128 q[AMK_GEMV_UNROLL];
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) q[u] = amk_ld128(wrow + (v + u * lanes) * 16);
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) {
        W::unpack(q[u], w);
        amk_gemv_fma<W::per, R>(w, x + (v + u * lanes) * W::per, kc, nr, s);
      }
    }
    for (; v < nvec; v += lanes) {
      W::unpack(amk_ld128(wrow + v * 16), w);
      amk_gemv_fma<W::per, R>(w, x + v * W::per, kc, nr, s);
    }
    done = nvec * W::per;
  }
  for (int k = done + lane; k < kc; k += lanes) {
    w[0] = W::at(wrow, k);
    amk_gemv_fma<1, R>(w, x + k, kc, nr, s);
  }
}

/* int8 / int4 levels of one 16-byte load dequantized with one scale and zero:
 * (level − zero) · scale, level = the int8 value, or the nibble (− 8 without zero points) */
template <bool NIBBLES>
struct amk_qtype {
  static constexpr int per = NIBBLES ? 32 : 16;
  AMK_DEV static void unpack(const amk_u128& q, float zero, float scale, float* w) {
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
    AMK_UNROLL
    for (int i = 0; i < 4; ++i) {
      AMK_UNROLL
      for (int b = 0; b < 4; ++b) {
        const uint32_t byte = (words[i] >> (8 * b)) & 0xffu;
        if (NIBBLES) {
          w[8 * i + 2 * b] = (static_cast<float>(byte & 0xfu) - zero) * scale;
          w[8 * i + 2 * b + 1] = (static_cast<float>(byte >> 4) - zero) * scale;
        } else {
          w[4 * i + b] = (static_cast<float>(static_cast<int8_t>(byte)) - zero) * scale;
        }
      }
    }
  }
};

/* the scale and zero of column k of quantized row `row` (zero 8 for nibbles without zero points) */
AMK_DEV void amk_qscale(const amk_qtable& t, int64_t row, int64_t k, float* zero, float* scale) {
  const int64_t g = k / t.group;
  *scale = amk_ld(t.scales, row * t.s_cols + (g < t.s_cols ? g : t.s_cols - 1));
  *zero = t.has_zeros ? amk_ld(t.zeros, row * t.z_cols + (g < t.z_cols ? g : t.z_cols - 1)) : (t.nibbles ? 8.0f : 0.0f);
}

template <bool NIBBLES, int R>
AMK_DEV void amk_gemv_qlane(const amk_qtable& t, int64_t row, int64_t k0, const float* x, int kc, int nr,
                            bool vec, float* s) {
  using Q = amk_qtype<NIBBLES>;
  const int lane = amk_lane(), lanes = amk_warp_lanes();
  const unsigned char* qrow = t.q.p + row * t.q_cols + (NIBBLES ? k0 / 2 : k0);
  float w[Q::per];
  int done = 0;
  if (vec) {
    const int nvec = kc / Q::per;
    int v = lane;
    for (; v + (AMK_GEMV_UNROLL - 1) * lanes < nvec; v += AMK_GEMV_UNROLL * lanes) {
      amk_u128 q[AMK_GEMV_UNROLL];
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) q[u] = amk_ld128(qrow + (v + u * lanes) * 16);
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) {
        float zero, scale;
        amk_qscale(t, row, k0 + (v + u * lanes) * Q::per, &zero, &scale);
        Q::unpack(q[u], zero, scale, w);
        amk_gemv_fma<Q::per, R>(w, x + (v + u * lanes) * Q::per, kc, nr, s);
      }
    }
    for (; v < nvec; v += lanes) {
      float zero, scale;
      amk_qscale(t, row, k0 + v * Q::per, &zero, &scale);
      Q::unpack(amk_ld128(qrow + v * 16), zero, scale, w);
      amk_gemv_fma<Q::per, R>(w, x + v * Q::per, kc, nr, s);
    }
    done = nvec * Q::per;
  }
  /* the rest (a layout the loads do not fit) element by element; a lane takes both nibbles of a byte */
  const int step = NIBBLES ? 2 : 1;
  for (int k = done + lane * step; k < kc; k += lanes * step) {
    for (int e = 0; e < step && k + e < kc; ++e) {
      w[0] = amk_dequant(t, row, k0 + k + e);
      amk_gemv_fma<1, R>(w, x + k + e, kc, nr, s);
    }
  }
}

/* the K chunk of x a pass stages: all of K when the rows fit the work area, else chunks that are
 * whole 16-byte loads (a multiple of `align` elements) next to the partial sums; 0 when too small */
AMK_DEV int64_t amk_gemv_chunk(int64_t k, int64_t rows, int64_t cols, int64_t align) {
  if (rows * k <= AMK_SMEM_WORK_FLOATS) return k;
  const int64_t left = AMK_SMEM_WORK_FLOATS - (cols * rows + 3) / 4 * 4;
  const int64_t kc = left > 0 ? left / rows / align * align : 0;
  return kc >= 4 * align ? kc : 0;
}

/* Run the tile one warp per column; false (nothing written) when the tile does not fit this path.
 * QUANT: 0 floating-point weights of dtype DT, 1 int8 levels, 2 int4 levels (DT unused); R: x rows
 * per pass (1 for a decode step). Out of line on the GPU: each variant gets its own registers. */
template <int DT, int QUANT, int R>
AMK_OP_FN bool amk_gemv_run(const amk_op_ctx& c, const amk_tile& t) {
  const int64_t rows = t.x_rows, cols = t.n_tile, k = t.k;
  const int64_t align = QUANT == 2 ? 32 : (QUANT == 1 ? 16 : amk_wtype<DT>::per);
  const int64_t kc_max = amk_gemv_chunk(k, rows, cols, align);
  if (kc_max == 0) return false;
  const bool chunked = kc_max < k;
  /* 16-byte loads: every weight row, chunk and staged x row starts 16-byte aligned (k a multiple of
   * align), and a quantization group spans whole loads */
  const bool vec = k % align == 0 && (QUANT ? t.qt.q_cols % 16 == 0 && t.qt.group % align == 0
                                            : (k * amk_wtype<DT>::bytes) % 16 == 0);
  float* acc = amk_work(c);                                      /* [cols][rows] partial sums */
  float* xs = acc + (chunked ? (cols * rows + 3) / 4 * 4 : 0);   /* [rows][kc] staged x */
  const int warp = amk_warp_id(), warps = amk_warps(), lane = amk_lane();
  for (int64_t k0 = 0; k0 < k; k0 += kc_max) {
    const int kc = static_cast<int>(k - k0 < kc_max ? k - k0 : kc_max);
    AMK_FOR_THREADS(i, rows * kc) {
      const int64_t r = i / kc;
      xs[i] = amk_ld(t.x, r * k + k0 + (i - r * kc));
    }
    __syncthreads();
    for (int64_t col = warp; col < cols; col += warps) {
      const int64_t row = t.n_off + col;
      for (int64_t r0 = 0; r0 < rows; r0 += R) {
        const int nr = rows - r0 < R ? static_cast<int>(rows - r0) : R;
        float s[R];
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
        if constexpr (QUANT != 0) {
          amk_gemv_qlane<QUANT == 2, R>(t.qt, row, k0, xs + r0 * kc, kc, nr, vec, s);
        } else {
          const unsigned char* wrow = t.w.p + (row * k + k0) * amk_wtype<DT>::bytes;
          amk_gemv_lane<DT, R>(wrow, xs + r0 * kc, kc, nr, vec, s);
        }
        for (int r = 0; r < nr; ++r) {
          const float total = amk_warp_sum(s[r]);
          if (lane != 0) continue;
          if (!chunked) {
            amk_tile_store(t, r0 + r, col, total);
          } else {
            float& slot = acc[col * rows + r0 + r];
            slot = (k0 == 0 ? 0.0f : slot) + total;
          }
        }
      }
    }
    __syncthreads();
  }
  if (chunked) {
    AMK_FOR_THREADS(i, cols * rows) { amk_tile_store(t, i % rows, i / rows, acc[i]); }
    __syncthreads();
  }
  return true;
}

/* the variant for the weight kind, with R x rows per pass */
template <int R>
AMK_DEV bool amk_gemv_rows(const amk_op_ctx& c, const amk_tile& t) {
  if (t.quant) {
    if (t.qt.nibbles && t.qt.q.dt == AMK_DT_U8) return amk_gemv_run<AMK_DT_F32, 2, R>(c, t);
    if (!t.qt.nibbles && t.qt.q.dt == AMK_DT_I8) return amk_gemv_run<AMK_DT_F32, 1, R>(c, t);
    return false;
  }
  switch (t.w.dt) {
    case AMK_DT_F32: return amk_gemv_run<AMK_DT_F32, 0, R>(c, t);
    case AMK_DT_BF16: return amk_gemv_run<AMK_DT_BF16, 0, R>(c, t);
    case AMK_DT_F16: return amk_gemv_run<AMK_DT_F16, 0, R>(c, t);
    default: return false;
  }
}

/* The tile on the warp-per-column path when it fits (see the header comment): true when done. */
AMK_DEV bool amk_gemv_fast(const amk_op_ctx& c, const amk_tile& t) {
  if (t.x_rows < 1 || t.x_rows > AMK_GEMV_MAX_ROWS || t.n_tile < 1 || t.k < 1 || t.k > INT32_MAX) return false;
  return t.x_rows == 1 ? amk_gemv_rows<1>(c, t) : amk_gemv_rows<AMK_GEMV_ROWS>(c, t);
}

#endif /* AMK_OPS_GEMV_CUH */
