/* Entry point of the opcode device code (spec §7, §8.5): amk_dispatch runs one instruction
 * with the whole block. Every thread of the block calls it; it returns 0 or an AMK_FAULT_*
 * code, the same in every thread (operands are validated before the first barrier).
 *
 * Numerics mirror amkspec.semantics (what the ReferenceVM runs); one header per family:
 *   movement.cuh    NOP, COPY, EMBED, KV_APPEND
 *   norm.cuh        RMSNORM, LAYERNORM
 *   linear.cuh      GEMV_TILE, GEMM_TILE (fp and int4/int8 weight-only; gemv.cuh: the warp-per-column path)
 *   attention.cuh   ATTENTION_TILE, ATTENTION_COMBINE, ROPE
 *   elementwise.cuh SILU_MUL, GELU, ADD, MUL, SOFTMAX, ALLREDUCE_SHARD, SAMPLE_ARGMAX
 *   quant.cuh       DEQUANT (and the dequantization GEMV uses)
 *   fused.cuh       FUSED (recipe steps)
 * dtype.cuh holds the element conversions, reduce.cuh the block reductions and the scratch
 * layout, common.cuh the context, operand views, params and broadcasting.
 */
#ifndef AMK_OPS_OPS_CUH
#define AMK_OPS_OPS_CUH

#include "attention.cuh"
#include "common.cuh"
#include "elementwise.cuh"
#include "fused.cuh"
#include "linear.cuh"
#include "movement.cuh"
#include "norm.cuh"
#include "quant.cuh"

/* every opcode but FUSED (a FUSED step is never FUSED) */
AMK_DEV int amk_dispatch_primitive(const amk_op_ctx& c) {
  switch (c.ins->op) {
    case AMK_OP_NOP: return 0;
    case AMK_OP_COPY: return amk_op_copy(c);
    case AMK_OP_EMBED: return amk_op_embed(c);
    case AMK_OP_RMSNORM: return amk_op_rmsnorm(c);
    case AMK_OP_LAYERNORM: return amk_op_layernorm(c);
    case AMK_OP_GEMV_TILE:
    case AMK_OP_GEMM_TILE: return amk_op_linear_tile(c);
    case AMK_OP_ATTENTION_TILE: return amk_op_attention_tile(c);
    case AMK_OP_ROPE: return amk_op_rope(c);
    case AMK_OP_SILU_MUL: return amk_op_silu_mul(c);
    case AMK_OP_GELU: return amk_op_gelu(c);
    case AMK_OP_ADD: return amk_op_add(c);
    case AMK_OP_MUL: return amk_op_mul(c);
    case AMK_OP_DEQUANT: return amk_op_dequant(c);
    case AMK_OP_SOFTMAX: return amk_op_softmax(c);
    case AMK_OP_ALLREDUCE_SHARD: return amk_op_allreduce_shard(c);
    case AMK_OP_KV_APPEND: return amk_op_kv_append(c);
    case AMK_OP_SAMPLE_ARGMAX: return amk_op_sample_argmax(c);
    case AMK_OP_ATTENTION_COMBINE: return amk_op_attention_combine(c);
    default: return AMK_FAULT_OPCODE;
  }
}

AMK_DEV int amk_dispatch(const amk_op_ctx& c) {
  if (blockDim.x > AMK_OP_MAX_THREADS || c.smem == nullptr || c.smem_bytes < AMK_OP_SMEM_BYTES)
    return AMK_FAULT_LAUNCH;
#ifdef __CUDACC__
  if (blockDim.x % AMK_WARP) return AMK_FAULT_LAUNCH; /* the warp paths need whole warps (O503) */
#endif
  return c.ins->op == AMK_OP_FUSED ? amk_op_fused(c) : amk_dispatch_primitive(c);
}

#endif /* AMK_OPS_OPS_CUH */
