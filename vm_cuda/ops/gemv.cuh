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
/* 16-byte weight loads per group: 4, the next group loaded while the current one is used (software
 * pipelining); where a block of more than 512 threads leaves 64 registers per thread, groups of 2
 * loaded together and then used (no second group: it would spill) */
#if defined(AMK_BLOCK_THREADS) && AMK_BLOCK_THREADS > 512
#define AMK_GEMV_UNROLL 2
#define AMK_GEMV_PIPELINE 0
#else
#define AMK_GEMV_UNROLL 4
#define AMK_GEMV_PIPELINE 1
#endif
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

/* a weight element type known at compile time: elements per 16 bytes, one element, and the j-th four
 * elements of a 16-byte load (converted four at a time, so a lane holds four weights, not sixteen) */
template <int DT>
struct amk_wtype;

AMK_DEV uint32_t amk_word(const amk_u128& q, int i) { return i == 0 ? q.x : (i == 1 ? q.y : (i == 2 ? q.z : q.w)); }

template <>
struct amk_wtype<AMK_DT_F32> {
  static constexpr int per = 4, bytes = 4;
  AMK_DEV static float at(const unsigned char* p, int64_t i) { return reinterpret_cast<const float*>(p)[i]; }
  AMK_DEV static void four(const amk_u128& q, int, float* w) {
    w[0] = amk_u2f(q.x), w[1] = amk_u2f(q.y), w[2] = amk_u2f(q.z), w[3] = amk_u2f(q.w);
  }
};

template <>
struct amk_wtype<AMK_DT_BF16> {
  static constexpr int per = 8, bytes = 2;
  AMK_DEV static float at(const unsigned char* p, int64_t i) {
    return amk_bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  }
  AMK_DEV static void four(const amk_u128& q, int j, float* w) {
    const uint32_t a = amk_word(q, 2 * j), b = amk_word(q, 2 * j + 1);
    w[0] = amk_u2f(a << 16), w[1] = amk_u2f(a & 0xffff0000u), w[2] = amk_u2f(b << 16), w[3] = amk_u2f(b & 0xffff0000u);
  }
};

template <>
struct amk_wtype<AMK_DT_F16> {
  static constexpr int per = 8, bytes = 2;
  AMK_DEV static float at(const unsigned char* p, int64_t i) { return amk_h2f(reinterpret_cast<const uint16_t*>(p)[i]); }
  AMK_DEV static void four(const amk_u128& q, int j, float* w) {
    const uint32_t a = amk_word(q, 2 * j), b = amk_word(q, 2 * j + 1);
    w[0] = amk_h2f(a), w[1] = amk_h2f(a >> 16), w[2] = amk_h2f(b), w[3] = amk_h2f(b >> 16);
  }
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

/* The lane's 16-byte loads of one row (nvec loads, this lane's are lane, lane + lanes, ...), handed to
 * use(load, index) AMK_GEMV_UNROLL at a time, all of a group issued before any is used; with
 * AMK_GEMV_PIPELINE the next group is loaded before the current one is used, so that a lane always
 * has a group of loads in flight. */
template <class Use>
AMK_DEV void amk_gemv_stream(const unsigned char* row, int nvec, Use use) {
  const int lane = amk_lane(), lanes = amk_warp_lanes(), stride = AMK_GEMV_UNROLL * lanes;
  int v = lane;
#if AMK_GEMV_PIPELINE
  if (v + (AMK_GEMV_UNROLL - 1) * lanes < nvec) {
    amk_u128 cur[AMK_GEMV_UNROLL], nxt[AMK_GEMV_UNROLL];
    AMK_UNROLL
    for (int u = 0; u < AMK_GEMV_UNROLL; ++u) cur[u] = amk_ld128(row + (v + u * lanes) * 16);
    for (;;) {
      /* the next group, or the current one again after the last (no branch: the arrays stay registers) */
      const bool more = v + stride + (AMK_GEMV_UNROLL - 1) * lanes < nvec;
      const int next = more ? v + stride : v;
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) nxt[u] = amk_ld128(row + (next + u * lanes) * 16);
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) use(cur[u], v + u * lanes);
      v += stride;
      if (!more) break;
      AMK_UNROLL
      for (int u = 0; u < AMK_GEMV_UNROLL; ++u) cur[u] = nxt[u];
    }
  }
#else
  for (; v + (AMK_GEMV_UNROLL - 1) * lanes < nvec; v += stride) {
    amk_u128 q[AMK_GEMV_UNROLL];
    AMK_UNROLL
    for (int u = 0; u < AMK_GEMV_UNROLL; ++u) q[u] = amk_ld128(row + (v + u * lanes) * 16);
    AMK_UNROLL
    for (int u = 0; u < AMK_GEMV_UNROLL; ++u) use(q[u], v + u * lanes);
  }
#endif
  for (; v < nvec; v += lanes) use(amk_ld128(row + v * 16), v);
}

/* one lane's share of a weight row chunk (kc elements from wrow) against the staged x rows */
template <int DT, int R>
AMK_DEV void amk_gemv_lane(const unsigned char* wrow, const float* x, int kc, int nr, bool vec, float* s) {
  using W = amk_wtype<DT>;
  const int nvec = vec ? kc / W::per : 0;
  amk_gemv_stream(wrow, nvec, [&](const amk_u128& q, int v) {
    AMK_UNROLL
    for (int j = 0; j < W::per / 4; ++j) {
      float w[4];
      W::four(q, j, w);
      amk_gemv_fma<4, R>(w, x + v * W::per + 4 * j, kc, nr, s);
    }
  });
  const int lanes = amk_warp_lanes();
  for (int k = nvec * W::per + amk_lane(); k < kc; k += lanes) {
    const float w = W::at(wrow, k);
    amk_gemv_fma<1, R>(&w, x + k, kc, nr, s);
  }
}

/* int8 / int4 levels of one 16-byte load dequantized four at a time with one scale, zero and offset:
 * (level − zero) · scale, level = the int8 value or the nibble (zero 8 without zero points); with an
 * affine table (quant.cuh) level · scale + offset, one rounding (amk_affine) */
template <bool NIBBLES>
struct amk_qtype {
  static constexpr int per = NIBBLES ? 32 : 16;
  AMK_DEV static float weight(float level, float zero, float scale, float offset, bool affine) {
    return affine ? amk_affine(level, scale, offset) : (level - zero) * scale;
  }
  AMK_DEV static void four(const amk_u128& q, int j, float zero, float scale, float offset, bool affine,
                           float* w) {
    if (NIBBLES) { /* elements 4j..4j+3: bytes 2j%4, 2j%4+1 of word j/2, low nibble first */
      const uint32_t half = amk_word(q, j / 2) >> (16 * (j % 2));
      AMK_UNROLL
      for (int e = 0; e < 4; ++e)
        w[e] = weight(static_cast<float>((half >> (4 * e)) & 0xfu), zero, scale, offset, affine);
    } else {
      const uint32_t word = amk_word(q, j);
      AMK_UNROLL
      for (int e = 0; e < 4; ++e)
        w[e] = weight(static_cast<float>(static_cast<int8_t>((word >> (8 * e)) & 0xffu)), zero, scale, offset,
                      affine);
    }
  }
};

/* a scale or zero point: F32, F16 or BF16 (amk_gemv_fast checks), without a jump table */
AMK_DEV bool amk_small_float(int32_t dt) { return dt == AMK_DT_F32 || dt == AMK_DT_F16 || dt == AMK_DT_BF16; }
AMK_DEV float amk_ld_small(const amk_view& v, int64_t i) {
  if (v.dt == AMK_DT_F32) return reinterpret_cast<const float*>(v.p)[i];
  const uint16_t bits = reinterpret_cast<const uint16_t*>(v.p)[i];
  return v.dt == AMK_DT_F16 ? amk_h2f(bits) : amk_bf16_to_f32(bits);
}

/* what one quantized weight row needs in the loop, copied out of the table into registers */
struct amk_qrow {
  const unsigned char* q;
  amk_view scales, zeros;
  int64_t s0, z0, s_last, z_last, group;
  bool has_zeros, affine;
};

/* the scale, zero and offset of column k (zero 8 for nibbles with neither zero points nor an affine
 * table: level = nibble − 8; an affine table holds (scale, offset) pairs) */
template <bool NIBBLES>
AMK_DEV void amk_qscale(const amk_qrow& r, int64_t k, float* zero, float* scale, float* offset) {
  const int64_t g = k / r.group, sg = r.s0 + (g < r.s_last ? g : r.s_last);
  *scale = amk_ld_small(r.scales, r.affine ? 2 * sg : sg);
  *offset = r.affine ? amk_ld_small(r.scales, 2 * sg + 1) : 0.0f;
  *zero = r.has_zeros ? amk_ld_small(r.zeros, r.z0 + (g < r.z_last ? g : r.z_last))
                      : (NIBBLES && !r.affine ? 8.0f : 0.0f);
}

template <bool NIBBLES, int R>
AMK_DEV void amk_gemv_qlane(const amk_qtable& t, int64_t row, int64_t k0, const float* x, int kc, int nr,
                            bool vec, float* s) {
  using Q = amk_qtype<NIBBLES>;
  amk_qrow qr;
  qr.q = t.q.p + row * t.q_cols + (NIBBLES ? k0 / 2 : k0);
  qr.scales = t.scales, qr.zeros = t.zeros, qr.has_zeros = t.has_zeros, qr.group = t.group;
  qr.affine = t.affine;
  qr.s0 = row * t.s_cols, qr.s_last = t.s_cols - 1;
  qr.z0 = row * t.z_cols, qr.z_last = t.z_cols - 1;
  const int nvec = vec ? kc / Q::per : 0;
  amk_gemv_stream(qr.q, nvec, [&](const amk_u128& q, int v) {
    float zero, scale, offset;
    amk_qscale<NIBBLES>(qr, k0 + v * Q::per, &zero, &scale, &offset);
    AMK_UNROLL
    for (int j = 0; j < Q::per / 4; ++j) {
      float w[4];
      Q::four(q, j, zero, scale, offset, qr.affine, w);
      amk_gemv_fma<4, R>(w, x + v * Q::per + 4 * j, kc, nr, s);
    }
  });
  /* the rest (a layout the loads do not fit) element by element; a lane takes both nibbles of a byte */
  const int step = NIBBLES ? 2 : 1, lanes = amk_warp_lanes();
  for (int k = nvec * Q::per + amk_lane() * step; k < kc; k += lanes * step) {
    for (int e = 0; e < step && k + e < kc; ++e) {
      const float w = amk_dequant(t, row, k0 + k + e);
      amk_gemv_fma<1, R>(&w, x + k + e, kc, nr, s);
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
    if (!amk_small_float(t.qt.scales.dt) || (t.qt.has_zeros && !amk_small_float(t.qt.zeros.dt))) return false;
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
