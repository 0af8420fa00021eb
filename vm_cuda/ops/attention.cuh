/* Attention (spec §7; amkspec.semantics.attention): ATTENTION_TILE (single sequence, batched,
 * PARTIAL_WRITE split-KV rows), ATTENTION_COMBINE, ROPE.
 *
 * Caches are position-major [max_seq, n_kv, hd] (batched [B, max_seq, n_kv, hd]); query head
 * h reads kv head h / (n_heads / n_kv_heads) (GQA by repeat-interleave); a cache with one kv
 * head serves every group (torch broadcasting). Scores are processed in chunks with an online
 * softmax (one chunk, and so the reference's exact two-pass form, whenever the window fits).
 */
#ifndef AMK_OPS_ATTENTION_CUH
#define AMK_OPS_ATTENTION_CUH

#include <math.h>

#include "reduce.cuh"

struct amk_attn {
  amk_view q, k, v, out;
  amk_store_map map;
  int64_t hd, n_heads, n_kv, rep, start, len, batch, k_seq, v_seq, k_heads, v_heads;
  float scale;
  bool partial;
};

AMK_DEV int amk_attn_setup(const amk_op_ctx& c, amk_attn* a) {
  const amk_instruction_t* ins = c.ins;
  int f = amk_input(c, 0, &a->q);
  if (f == 0) f = amk_input(c, 1, &a->k);
  if (f == 0) f = amk_input(c, 2, &a->v);
  if (f == 0) f = amk_output(c, 0, &a->out);
  if (f) return f;
  if (!amk_has(ins, AMK_P_HEAD_DIM)) return AMK_FAULT_PARAM;
  a->hd = ins->params.head_dim;
  const int kr = a->k.s.rank;
  const bool batched = kr == 4;
  a->n_heads = amk_param_i(ins, AMK_P_N_HEADS, a->q.s.rank >= 2 ? static_cast<int32_t>(a->q.s.d[a->q.s.rank - 2]) : 1);
  a->n_kv = amk_param_i(ins, AMK_P_N_KV_HEADS, static_cast<int32_t>(a->n_heads));
  if (a->hd <= 0 || a->n_kv <= 0 || a->n_heads < 0 || a->n_heads % a->n_kv) return AMK_FAULT_SHAPE;
  if ((kr != 3 && kr != 4) || a->v.s.rank != kr) return AMK_FAULT_SHAPE;
  a->rep = a->n_heads / a->n_kv;
  a->k_seq = a->k.s.d[kr - 3];
  a->v_seq = a->v.s.d[kr - 3];
  a->k_heads = a->k.s.d[kr - 2];
  a->v_heads = a->v.s.d[kr - 2];
  if (a->k_heads == 0) return AMK_FAULT_SHAPE;
  a->start = amk_param_i(ins, AMK_P_KV_START, 0);
  const int64_t length = amk_param_i(ins, AMK_P_KV_LEN, static_cast<int32_t>(a->k_seq));
  a->len = length > 0 ? length : 0;
  if (a->start < 0 || a->start + a->len > a->k_seq || a->start + a->len > a->v_seq) return AMK_FAULT_SHAPE;
  a->scale = amk_param_f(ins, AMK_P_SCALE, static_cast<float>(1.0 / sqrt(static_cast<double>(a->hd))));
  a->batch = batched ? a->k.s.d[0] : 1;
  if (batched && a->v.s.d[0] != a->batch) return AMK_FAULT_SHAPE;
  if (a->q.n != a->batch * a->n_heads * a->hd) return AMK_FAULT_SHAPE;
  if (a->k.s.d[kr - 1] != a->hd || a->v.s.d[kr - 1] != a->hd) return AMK_FAULT_SHAPE;
  if ((a->k_heads != a->n_kv && a->k_heads != 1) || (a->v_heads != a->n_kv && a->v_heads != 1)) return AMK_FAULT_SHAPE;
  a->partial = !batched && (amk_param_i(ins, AMK_P_FLAGS, 0) & AMK_FLAG_PARTIAL_WRITE);
  amk_shape val;
  val.rank = batched ? 3 : 2;
  for (int i = 0; i < AMK_MAX_RANK; ++i) val.d[i] = 0;
  if (batched) {
    val.d[0] = a->batch;
    val.d[1] = a->n_heads;
    val.d[2] = a->hd;
  } else {
    val.d[0] = a->n_heads;
    val.d[1] = a->partial ? a->hd + 2 : a->hd;
  }
  if (!amk_store_plan(val, a->out.s, &a->map)) return AMK_FAULT_SHAPE;
  if (a->hd > AMK_SMEM_WORK_FLOATS / 2) return AMK_FAULT_SHAPE; /* the accumulator lives in scratch */
  return 0;
}

/* write value element `vi` of the result row that starts at `row0` (width w) to out */
AMK_DEV void amk_attn_write(const amk_attn& a, int64_t row0, int64_t w, const float* row) {
  if (a.map.flat) {
    AMK_FOR_THREADS(d, w) { amk_st(a.out, row0 + d, row[d]); }
    return;
  }
  AMK_FOR_THREADS(i, a.out.n) {
    int64_t vi = amk_value_index(a.map, i);
    if (vi >= row0 && vi < row0 + w) amk_st(a.out, i, row[vi - row0]);
  }
}

AMK_OP_FN int amk_op_attention_tile(const amk_op_ctx& c) {
  amk_attn a;
  int f = amk_attn_setup(c, &a);
  if (f) return f;
  const int64_t hd = a.hd;
  float* acc = amk_work(c); /* hd + 2 floats: [acc | m | l] */
  float* sc = acc + hd + 2;
  const int64_t chunk = AMK_SMEM_WORK_FLOATS - hd - 2;
  const float neg_inf = -amk_inf();
  for (int64_t bh = 0; bh < a.batch * a.n_heads; ++bh) {
    const int64_t b = bh / a.n_heads, h = bh - b * a.n_heads, g = h / a.rep;
    const int64_t kh = a.k_heads == 1 ? 0 : g, vh = a.v_heads == 1 ? 0 : g;
    const int64_t q0 = bh * hd;
    AMK_FOR_THREADS(d, hd) { acc[d] = 0.0f; }
    float m_run = neg_inf, l_run = 0.0f;
    for (int64_t j0 = 0; j0 < a.len; j0 += chunk) {
      const int64_t n = a.len - j0 < chunk ? a.len - j0 : chunk;
      float local = neg_inf;
      AMK_FOR_THREADS(jj, n) {
        const int64_t k0 = ((b * a.k_seq + a.start + j0 + jj) * a.k_heads + kh) * hd;
        float s = 0.0f;
        for (int64_t d = 0; d < hd; ++d) s += amk_ld(a.q, q0 + d) * amk_ld(a.k, k0 + d);
        s = s * a.scale;
        sc[jj] = s;
        local = s > local || amk_isnan(s) ? s : local;
      }
      const float m_c = amk_block_max(c, local);
      const float m_new = m_c > m_run || amk_isnan(m_c) ? m_c : m_run;
      const float alpha = m_run == neg_inf ? 0.0f : expf(m_run - m_new);
      float part = 0.0f;
      AMK_FOR_THREADS(jj, n) {
        sc[jj] = expf(sc[jj] - m_new);
        part += sc[jj];
      }
      l_run = l_run * alpha + amk_block_sum(c, part);
      AMK_FOR_THREADS(d, hd) {
        float s = acc[d] * alpha;
        for (int64_t jj = 0; jj < n; ++jj)
          s += sc[jj] * amk_ld(a.v, ((b * a.v_seq + a.start + j0 + jj) * a.v_heads + vh) * hd + d);
        acc[d] = s;
      }
      __syncthreads();
      m_run = m_new;
    }
    if (a.partial) {
      if (threadIdx.x == 0) {
        acc[hd] = m_run;
        acc[hd + 1] = l_run;
      }
    } else {
      AMK_FOR_THREADS(d, hd) { acc[d] = a.len > 0 ? acc[d] / l_run : 0.0f; }
    }
    __syncthreads();
    const int64_t w = a.partial ? hd + 2 : hd;
    amk_attn_write(a, bh * w, w, acc);
    __syncthreads();
  }
  return 0;
}

/* ATTENTION_COMBINE: M = max_p m_p; w_p = e^(m_p − M) if l_p > 0 else 0;
 * out = Σ_p w_p·acc_p / max(Σ_p w_p·l_p, 1e-20) */
AMK_OP_FN int amk_op_attention_combine(const amk_op_ctx& c) {
  amk_view part[AMK_MAX_INPUTS], out;
  const int np = c.ins->n_inputs;
  if (np < 1 || np > AMK_MAX_INPUTS) return AMK_FAULT_OPERAND;
  int f = amk_output(c, 0, &out);
  for (int p = 0; p < np && f == 0; ++p) f = amk_input(c, p, &part[p]);
  if (f) return f;
  const int64_t hd = amk_param_i(c.ins, AMK_P_HEAD_DIM,
                                 part[0].s.rank ? static_cast<int32_t>(part[0].s.d[part[0].s.rank - 1] - 2) : 0);
  if (hd <= 0 || part[0].n % (hd + 2)) return AMK_FAULT_SHAPE;
  const int64_t n_heads = amk_param_i(c.ins, AMK_P_N_HEADS, static_cast<int32_t>(part[0].n / (hd + 2)));
  for (int p = 0; p < np; ++p)
    if (n_heads < 0 || part[p].n != n_heads * (hd + 2)) return AMK_FAULT_SHAPE;
  amk_shape val;
  val.rank = 2;
  val.d[0] = n_heads;
  val.d[1] = hd;
  val.d[2] = val.d[3] = 0;
  amk_store_map map;
  if (!amk_store_plan(val, out.s, &map)) return AMK_FAULT_SHAPE;
  AMK_FOR_THREADS(i, out.n) {
    const int64_t vi = amk_value_index(map, i);
    const int64_t h = vi / hd, d = vi - h * hd, r = h * (hd + 2);
    float big_m = amk_ld(part[0], r + hd);
    for (int p = 1; p < np; ++p) {
      float m = amk_ld(part[p], r + hd);
      big_m = m > big_m || amk_isnan(m) ? m : big_m;
    }
    float total = 0.0f, a = 0.0f;
    for (int p = 0; p < np; ++p) {
      const float m = amk_ld(part[p], r + hd), mass = amk_ld(part[p], r + hd + 1);
      const float w = mass > 0.0f ? expf(m - big_m) : 0.0f;
      total = total + mass * w;
      a = a + amk_ld(part[p], r + d) * w;
    }
    amk_st(out, i, a / (total < 1e-20f ? 1e-20f : total));
  }
  return 0;
}

/* ROPE (rotate-half): inv_freq[i] = 1/theta^(i/half); angle = pos · inv_freq[i];
 * out[i] = x[i]·cos − x[i+half]·sin; out[i+half] = x[i+half]·cos + x[i]·sin */
AMK_OP_FN int amk_op_rope(const amk_op_ctx& c) {
  amk_view x, pos, out;
  int f = amk_input(c, 0, &x);
  if (f == 0) f = amk_input(c, 1, &pos);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  if (!amk_has(c.ins, AMK_P_HEAD_DIM)) return AMK_FAULT_PARAM;
  const int64_t hd = c.ins->params.head_dim, half = hd / 2;
  const int r = x.s.rank;
  if (hd <= 0 || hd % 2 || (r != 2 && r != 3) || x.s.d[r - 1] != hd) return AMK_FAULT_SHAPE;
  const int64_t slabs = r == 2 ? 1 : x.s.d[0];
  if (pos.n < 1 || (r == 3 && pos.n != slabs)) return AMK_FAULT_SHAPE;
  amk_store_map map;
  if (!amk_store_plan(x.s, out.s, &map)) return AMK_FAULT_SHAPE;
  const float theta = amk_param_filled_f(c.ins, AMK_P_THETA);
  const int64_t slab_len = r == 2 ? x.n : x.n / (slabs ? slabs : 1);
  AMK_FOR_THREADS(o, out.n) {
    const int64_t vi = amk_value_index(map, o);
    const int64_t s = r == 2 ? 0 : vi / slab_len, e = vi % hd;
    const int64_t i = e < half ? e : e - half;
    const float inv_freq = 1.0f / powf(theta, static_cast<float>(i) / static_cast<float>(half));
    const float ang = amk_ld(pos, s) * inv_freq;
    const float cs = cosf(ang), sn = sinf(ang);
    const int64_t base = vi - e;
    const float x1 = amk_ld(x, base + i), x2 = amk_ld(x, base + i + half);
    amk_st(out, o, e < half ? x1 * cs - x2 * sn : x2 * cs + x1 * sn);
  }
  return 0;
}

#endif /* AMK_OPS_ATTENTION_CUH */
