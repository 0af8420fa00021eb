/* Data movement (spec §7; amkspec.semantics.movement): NOP, COPY, EMBED, KV_APPEND.
 * These convert directly to the destination dtype (no float32 intermediate for integers). */
#ifndef AMK_OPS_MOVEMENT_CUH
#define AMK_OPS_MOVEMENT_CUH

#include "dtype.cuh"

/* COPY: dst <- src broadcast to dst's shape (never a reshape), direct conversion */
AMK_OP_FN int amk_op_copy(const amk_op_ctx& c) {
  amk_view src, dst;
  int f = amk_input(c, 0, &src);
  if (f == 0) f = amk_output(c, 0, &dst);
  if (f) return f;
  if (!amk_expands_to(src.s, dst.s)) return AMK_FAULT_SHAPE;
  const bool same = amk_same_shape(src.s, dst.s);
  AMK_FOR_THREADS(i, dst.n) { amk_st_d(dst, i, amk_ld_d(src, same ? i : amk_bcast_offset(src.s, dst.s, i))); }
  return 0;
}

/* EMBED: out <- table[ids] (rows of table.shape[1:]), reinterpreted row-major as out's shape */
AMK_OP_FN int amk_op_embed(const amk_op_ctx& c) {
  amk_view ids, table, out;
  int f = amk_input(c, 0, &ids);
  if (f == 0) f = amk_input(c, 1, &table);
  if (f == 0) f = amk_output(c, 0, &out);
  if (f) return f;
  if (table.s.rank == 0) return AMK_FAULT_SHAPE;
  const int64_t rows = table.s.d[0];
  const int64_t row_len = rows > 0 ? table.n / rows : 0;
  for (int64_t k = 0; k < ids.n; ++k) { /* every thread checks every id: one verdict */
    int64_t id = amk_ld_i(ids, k);
    if (id < 0 || id >= rows) return AMK_FAULT_INDEX;
  }
  if (ids.n * row_len != out.n) return AMK_FAULT_SHAPE;
  AMK_FOR_THREADS(i, out.n) {
    int64_t r = i / row_len, j = i - r * row_len;
    amk_st_d(out, i, amk_ld_d(table, amk_ld_i(ids, r) * row_len + j));
  }
  return 0;
}

/* KV_APPEND: whole rows of `new` into cache[pos : pos+r] (rank 3) or cache[:, pos] (rank 4) */
AMK_OP_FN int amk_op_kv_append(const amk_op_ctx& c) {
  amk_view nw, cache;
  int f = amk_input(c, 0, &nw);
  if (f == 0) f = amk_output(c, 0, &cache);
  if (f) return f;
  if (!amk_has(c.ins, AMK_P_POS)) return AMK_FAULT_PARAM;
  const int64_t pos = c.ins->params.pos;
  const int r = cache.s.rank;
  if (r != 3 && r != 4) return AMK_FAULT_SHAPE;
  const int64_t row = cache.s.d[r - 2] * cache.s.d[r - 1];
  const int64_t max_seq = cache.s.d[r - 3];
  int64_t count, batch;
  if (r == 4) {
    batch = cache.s.d[0];
    count = 1;
    if (nw.n != batch * row) return AMK_FAULT_SHAPE;
  } else {
    batch = 1;
    if (row == 0 || nw.n % row) return AMK_FAULT_SHAPE;
    count = nw.n / row;
  }
  if (pos < 0 || pos + count > max_seq) return AMK_FAULT_SHAPE;
  /* element i of new: sequence b = i / (count*row), then the row-major slot at pos */
  AMK_FOR_THREADS(i, nw.n) {
    int64_t per_seq = count * row;
    int64_t b = i / per_seq, k = i - b * per_seq;
    amk_st_d(cache, (b * max_seq + pos) * row + k, amk_ld_d(nw, i));
  }
  return 0;
}

#endif /* AMK_OPS_MOVEMENT_CUH */
