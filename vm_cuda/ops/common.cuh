/* Shared pieces of the opcode device code (spec §7, §8.5): the op context, fault codes,
 * operand views, params with their defaults, and broadcasting.
 *
 * Every opcode runs with the whole block: validation first (no barrier, the same verdict
 * in every thread), then thread-strided work; cross-thread data goes through ctx.smem
 * only. Numerics follow amkspec.semantics: operands are read as float32, computed in
 * float32, and cast once to the output dtype (COPY/EMBED/KV_APPEND convert directly).
 */
#ifndef AMK_OPS_COMMON_CUH
#define AMK_OPS_COMMON_CUH

#include <stdint.h>
#include <string.h>

#include "../abi.h"

#define AMK_DEV __device__ inline

/* one opcode's entry: kept out of line on the GPU so the dispatch switch does not inline every
 * op into one frame (register pressure, stack size, ptxas time) */
#ifdef __CUDACC__
#define AMK_OP_FN __device__ __noinline__
#else
#define AMK_OP_FN inline
#endif

/* dynamic shared memory each block hands to the ops (the largest block they accept, and the warp
 * width, are abi.h's AMK_OP_MAX_THREADS and AMK_WARP) */
#define AMK_OP_SMEM_BYTES 32768

/* fault codes an opcode returns (0 = success) */
#define AMK_FAULT_NONE 0
#define AMK_FAULT_OPCODE 1  /* unknown opcode, or a FUSED step that is FUSED */
#define AMK_FAULT_OPERAND 2 /* missing operand / buffer id outside the table / bad buffer record */
#define AMK_FAULT_DTYPE 3   /* a buffer dtype code no op knows */
#define AMK_FAULT_SHAPE 4   /* shapes that do not fit the op (the reference raises) */
#define AMK_FAULT_PARAM 5   /* a required param is absent, or a param value is unusable */
#define AMK_FAULT_INDEX 6   /* an index read from data is out of range (EMBED ids) */
#define AMK_FAULT_LAUNCH 7  /* blockDim.x > AMK_OP_MAX_THREADS (or, on a GPU, not whole warps) */
#define AMK_FAULT_RECIPE 8  /* a FUSED step table outside the instruction table */

/* The instruction being executed and what it may touch (interface: mk-interface.md). */
struct amk_op_ctx {
  const amk_buffer_t* buffers;
  int32_t n_buffers;
  const amk_instruction_t* ins;
  unsigned char* smem;
  int32_t smem_bytes;
  const amk_instruction_t* instructions; /* the whole table (FUSED reaches its steps) */
  int32_t n_instructions;
};

/* ---------------------------------------------------------------- shapes */

struct amk_shape {
  int32_t rank;
  int64_t d[AMK_MAX_RANK];
};

AMK_DEV int64_t amk_numel(const amk_shape& s) {
  int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) n *= s.d[i];
  return n;
}

AMK_DEV bool amk_same_shape(const amk_shape& a, const amk_shape& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.d[i] != b.d[i]) return false;
  return true;
}

/* torch broadcasting of a and b into out; false when they do not broadcast */
AMK_DEV bool amk_broadcast(const amk_shape& a, const amk_shape& b, amk_shape* out) {
  int r = a.rank > b.rank ? a.rank : b.rank;
  amk_shape s;
  s.rank = r;
  for (int i = 0; i < AMK_MAX_RANK; ++i) s.d[i] = 0;
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank), ib = i - (r - b.rank);
    int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    s.d[i] = da == 1 ? db : da;
  }
  *out = s;
  return true;
}

/* true when src broadcasts to exactly dst (torch expand / copy_ rules: src rank <= dst rank) */
AMK_DEV bool amk_expands_to(const amk_shape& src, const amk_shape& dst) {
  if (src.rank > dst.rank) return false;
  for (int i = 0; i < src.rank; ++i) {
    int64_t ds = src.d[i], dd = dst.d[i + dst.rank - src.rank];
    if (ds != dd && ds != 1) return false;
  }
  return true;
}

/* flat row-major offset in src of the element at flat index `flat` of the broadcast shape big */
AMK_DEV int64_t amk_bcast_offset(const amk_shape& src, const amk_shape& big, int64_t flat) {
  int64_t off = 0, mul = 1, rem = flat;
  for (int d = big.rank - 1; d >= 0; --d) {
    int64_t extent = big.d[d];
    int64_t i = rem % extent;
    rem /= extent;
    int sd = d - (big.rank - src.rank);
    if (sd >= 0) {
      if (src.d[sd] != 1) off += i * mul;
      mul *= src.d[sd];
    }
  }
  return off;
}

/* How `store(out, value)` of amkspec.semantics maps out elements to value elements: same
 * element count → flat reshape; otherwise value broadcasts into out (copy_). */
struct amk_store_map {
  bool flat;
  amk_shape value, out;
};

AMK_DEV bool amk_store_plan(const amk_shape& value, const amk_shape& out, amk_store_map* m) {
  m->value = value;
  m->out = out;
  m->flat = amk_numel(value) == amk_numel(out);
  return m->flat || amk_expands_to(value, out);
}

AMK_DEV int64_t amk_value_index(const amk_store_map& m, int64_t out_flat) {
  return m.flat ? out_flat : amk_bcast_offset(m.value, m.out, out_flat);
}

/* ---------------------------------------------------------------- operand views */

/* One operand as the reference sees its storage tensor: a packed I4 buffer is a uint8
 * tensor whose last dim is ceil(K/2) (amkspec.semantics.dtypes.storage_shape). */
struct amk_view {
  unsigned char* p;
  int32_t dt;  /* storage dtype: I4 reads as U8 */
  amk_shape s; /* storage shape */
  int64_t n;   /* storage element count */
};

AMK_DEV bool amk_dtype_known(int32_t dt) {
  return (dt >= AMK_DT_F32 && dt <= AMK_DT_BOOL) || dt == AMK_DT_F64;
}

AMK_DEV int amk_view_of(const amk_op_ctx& c, int32_t id, amk_view* v) {
  if (id < 0 || id >= c.n_buffers) return AMK_FAULT_OPERAND;
  const amk_buffer_t& b = c.buffers[id];
  if (b.rank < 0 || b.rank > AMK_MAX_RANK) return AMK_FAULT_OPERAND;
  if (!amk_dtype_known(b.dtype)) return AMK_FAULT_DTYPE;
  v->s.rank = b.rank;
  for (int i = 0; i < AMK_MAX_RANK; ++i) v->s.d[i] = i < b.rank ? b.shape[i] : 0;
  int64_t expect = 1;
  for (int i = b.rank - 1; i >= 0; --i) {
    if (b.shape[i] < 0) return AMK_FAULT_OPERAND;
    if (b.shape[i] > 1 && b.stride[i] != expect) return AMK_FAULT_OPERAND; /* row-major only */
    expect *= b.shape[i];
  }
  if (expect != b.numel) return AMK_FAULT_OPERAND;
  v->dt = b.dtype;
  if (b.dtype == AMK_DT_I4) {
    v->dt = AMK_DT_U8;
    if (b.rank > 0) v->s.d[b.rank - 1] = (b.shape[b.rank - 1] + 1) / 2;
  }
  v->n = amk_numel(v->s);
  v->p = static_cast<unsigned char*>(b.ptr);
  if (v->p == nullptr && v->n > 0) return AMK_FAULT_OPERAND;
  return AMK_FAULT_NONE;
}

AMK_DEV int amk_input(const amk_op_ctx& c, int k, amk_view* v) {
  if (k >= c.ins->n_inputs || k >= AMK_MAX_INPUTS) return AMK_FAULT_OPERAND;
  return amk_view_of(c, c.ins->inputs[k], v);
}

AMK_DEV int amk_output(const amk_op_ctx& c, int k, amk_view* v) {
  if (k >= c.ins->n_outputs || k >= AMK_MAX_OUTPUTS) return AMK_FAULT_OPERAND;
  return amk_view_of(c, c.ins->outputs[k], v);
}

/* ---------------------------------------------------------------- params */

/* bit positions of amkspec.ir.PARAM_LAYOUT */
enum amk_param_bit {
  AMK_P_K = 0, AMK_P_N, AMK_P_M, AMK_P_N_TILE, AMK_P_M_TILE, AMK_P_N_OFF, AMK_P_M_OFF, AMK_P_HIDDEN,
  AMK_P_VOCAB, AMK_P_HEAD_DIM, AMK_P_N_HEADS, AMK_P_N_KV_HEADS, AMK_P_KV_START, AMK_P_KV_LEN, AMK_P_POS,
  AMK_P_QDTYPE, AMK_P_GROUP, AMK_P_FLAGS, AMK_P_DIM, AMK_P_EPS, AMK_P_SCALE, AMK_P_THETA
};

/* Whether the task sets a param (the reference applies its default only when it is absent):
 * the packer's presence mask, bit i = amkspec.ir.PARAM_LAYOUT[i]. */
AMK_DEV bool amk_has(const amk_instruction_t* ins, int bit) { return (ins->param_mask >> bit) & 1; }

/* A param's field as packed. Every param with an amkspec.ir.PARAM_DEFAULTS entry for the opcode
 * is filled with that default when the task leaves it out (abi.h, amk_params_t): read it so. */
AMK_DEV int32_t amk_param_filled_i(const amk_instruction_t* ins, int bit) {
  int32_t words[19];
  memcpy(words, &ins->params, sizeof(words));
  return words[bit];
}

AMK_DEV float amk_param_filled_f(const amk_instruction_t* ins, int bit) {
  const amk_params_t& p = ins->params;
  return bit == AMK_P_EPS ? p.eps : (bit == AMK_P_SCALE ? p.scale : p.theta);
}

/* A param without a PARAM_DEFAULTS entry: `dflt` (derived from the operands) when the task leaves it out. */
AMK_DEV int32_t amk_param_i(const amk_instruction_t* ins, int bit, int32_t dflt) {
  return amk_has(ins, bit) ? amk_param_filled_i(ins, bit) : dflt;
}

AMK_DEV float amk_param_f(const amk_instruction_t* ins, int bit, float dflt) {
  return amk_has(ins, bit) ? amk_param_filled_f(ins, bit) : dflt;
}

/* ---------------------------------------------------------------- warps and wide loads */

/* warp of the calling thread, its lane, and the warps of the block (a GPU block is a whole number
 * of warps: O503; the CPU build's last warp may be partial) */
AMK_DEV int amk_warp_id() { return static_cast<int>(threadIdx.x) / AMK_WARP; }
AMK_DEV int amk_lane() { return static_cast<int>(threadIdx.x) % AMK_WARP; }
AMK_DEV int amk_warps() { return (static_cast<int>(blockDim.x) + AMK_WARP - 1) / AMK_WARP; }
AMK_DEV int amk_warp_lanes() {
  const int left = static_cast<int>(blockDim.x) - amk_warp_id() * AMK_WARP;
  return left < AMK_WARP ? left : AMK_WARP;
}

/* sum over the warp, returned to every lane; every lane of the warp must call it */
AMK_DEV float amk_warp_sum(float v) {
#ifdef __CUDACC__
  for (int off = AMK_WARP / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
#else
  return amk_host_warp_sum(v);
#endif
}

/* 16 bytes of read-only data (weights: never written while the kernel runs) in one load:
 * LDG.E.128 through the non-coherent path on the GPU. `p` is 16-byte aligned. */
#ifdef __CUDACC__
typedef uint4 amk_u128;
/* volatile: consecutive loads stay in program order, all issued before the first use (in flight) */
AMK_DEV amk_u128 amk_ld128(const unsigned char* p) {
  amk_u128 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
#else
struct alignas(16) amk_u128 {
  uint32_t x, y, z, w;
};
inline amk_u128 amk_ld128(const unsigned char* p) {
  amk_u128 v;
  memcpy(&v, p, 16);
  return v;
}
#endif

/* 4 floats of the block's shared scratch (ctx.smem) in one load, `p` 16-byte aligned: LDS.128
 * on the GPU (the scratch pointer reaches the ops as a generic pointer; this names its space).
 * The "memory" clobber keeps it after the barrier that published the data. */
struct amk_f4 {
  float x, y, z, w;
};
AMK_DEV amk_f4 amk_lds128(const float* p) {
  amk_f4 v;
#ifdef __CUDACC__
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p)))
               : "memory");
#else
  memcpy(&v, p, 16);
#endif
  return v;
}

/* thread-strided loop bounds */
#define AMK_FOR_THREADS(var, count) \
  for (int64_t var = static_cast<int64_t>(threadIdx.x); var < (count); var += static_cast<int64_t>(blockDim.x))

#endif /* AMK_OPS_COMMON_CUH */
