/* Weight-only quantization (spec §7, OPS_FACTS §4; amkspec.semantics.quant): the dequantized
 * value of one weight element, and the DEQUANT opcode.
 *
 * Levels are grouped along K: column k uses table column min(k / group, n_cols − 1) (a short
 * table repeats its last group). I4 (qdtype 7): nibbles of the packed bytes, low nibble =
 * even column, minus 8 when there are neither zero points nor an affine table. Otherwise the
 * stored value is the level. w = (level − zero) · scale, in float32; with flags QUANT_AFFINE (the
 * extension, GGUF's Q4_1) the table holds (scale, offset) pairs and w = level · scale + offset.
 */
#ifndef AMK_OPS_QUANT_CUH
#define AMK_OPS_QUANT_CUH

#include "dtype.cuh"

/* a [rows, cols] view of quantized levels and their [rows, n_cols] scale/zero tables */
struct amk_qtable {
  amk_view q, scales, zeros;
  bool has_zeros, nibbles, affine; /* affine: scales holds [rows, s_cols, 2] (scale, offset) pairs */
  int64_t q_cols, s_cols, z_cols, group;
};

AMK_DEV float amk_level(const amk_qtable& t, int64_t row, int64_t k) {
  if (t.nibbles) {
    int64_t byte = amk_ld_i(t.q, row * t.q_cols + k / 2);
    float nib = static_cast<float>((k & 1) ? (byte >> 4) & 0xF : byte & 0xF);
    return t.has_zeros || t.affine ? nib : nib - 8.0f;
  }
  return amk_ld(t.q, row * t.q_cols + k);
}

/* level · scale + offset with one rounding. level · scale is exact in float32 (a level of at most
 * 8 bits times a float16 scale: at most 19 significant bits, never below 2^-24), so this equals
 * the reference's two roundings (amkspec.semantics.quant) and GGUF's d * q + m, bit for bit. */
AMK_DEV float amk_affine(float level, float scale, float offset) { return __fmaf_rn(level, scale, offset); }

AMK_DEV float amk_dequant(const amk_qtable& t, int64_t row, int64_t k) {
  int64_t g = k / t.group;
  float lv = amk_level(t, row, k);
  const int64_t sg = row * t.s_cols + (g < t.s_cols ? g : t.s_cols - 1);
  if (t.affine) return amk_affine(lv, amk_ld(t.scales, 2 * sg), amk_ld(t.scales, 2 * sg + 1));
  if (t.has_zeros) lv = lv - amk_ld(t.zeros, row * t.z_cols + (g < t.z_cols ? g : t.z_cols - 1));
  return lv * amk_ld(t.scales, sg);
}

/* the table columns and whether `k` levels fit; false when the reference would raise */
AMK_DEV bool amk_qtable_fits(const amk_qtable& t, int64_t k) {
  if (t.group <= 0) return false;
  if (k > 0 && (t.s_cols <= 0 || (t.has_zeros && t.z_cols <= 0))) return false;
  return t.nibbles ? 2 * t.q_cols >= k : t.q_cols >= k;
}

/* DEQUANT: rows = q's leading dims, K = out.numel / rows; I4 nibbles only when q is packed */
AMK_OP_FN int amk_op_dequant(const amk_op_ctx& c) {
  amk_qtable t;
  amk_view out;
  int f = amk_input(c, 0, &t.q);
  if (f == 0) f = amk_input(c, 1, &t.scales);
  t.has_zeros = c.ins->n_inputs > 2;
  t.affine = (amk_param_i(c.ins, AMK_P_FLAGS, 0) & AMK_FLAG_QUANT_AFFINE) != 0;
  if (f == 0 && t.has_zeros) f = amk_input(c, 2, &t.zeros);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  if (t.q.s.rank < 1 || (t.affine && t.has_zeros)) return AMK_FAULT_SHAPE;
  t.q_cols = t.q.s.d[t.q.s.rank - 1];
  int64_t rows = 1;
  for (int d = 0; d + 1 < t.q.s.rank; ++d) rows *= t.q.s.d[d];
  if (rows == 0 || out.n % rows) return AMK_FAULT_SHAPE;
  const int64_t k = out.n / rows;
  const int64_t per = t.affine ? 2 : 1; /* table entries per group */
  if (t.scales.n % (rows * per) || (t.has_zeros && t.zeros.n % rows)) return AMK_FAULT_SHAPE;
  t.s_cols = t.scales.n / (rows * per);
  t.z_cols = t.has_zeros ? t.zeros.n / rows : 0;
  t.group = amk_param_i(c.ins, AMK_P_GROUP, static_cast<int32_t>(k));
  const bool packed = t.q.dt == AMK_DT_U8 && t.q_cols == (k + 1) / 2;
  t.nibbles = amk_param_i(c.ins, AMK_P_QDTYPE, 0) == AMK_DT_I4 && packed;
  if (!amk_qtable_fits(t, k)) return AMK_FAULT_SHAPE;
  AMK_FOR_THREADS(i, out.n) {
    int64_t row = i / k;
    amk_st(out, i, amk_dequant(t, row, i - row * k));
  }
  return 0;
}

#endif /* AMK_OPS_QUANT_CUH */
