/* FUSED (spec §7; amkspec.semantics.fused): a recipe of primitive steps run as one task.
 * The packer stores the steps as ordinary instructions after the tasks
 * (instructions[step_first .. step_first + n_steps)), their operands already resolved to
 * buffer ids: task inputs, the task's output ("final"), or zero-initialised scratch buffers.
 * The block runs them in order with a barrier between steps, so a step sees the previous
 * steps' writes (__syncthreads orders the block's global memory accesses). */
#ifndef AMK_OPS_FUSED_CUH
#define AMK_OPS_FUSED_CUH

#include "common.cuh"

AMK_DEV int amk_dispatch_primitive(const amk_op_ctx& c);

AMK_OP_FN int amk_op_fused(const amk_op_ctx& c) {
  const int64_t first = c.ins->step_first, n = c.ins->n_steps;
  if (c.instructions == nullptr || n < 1 || first < 0 || first + n > c.n_instructions) return AMK_FAULT_RECIPE;
  for (int64_t s = 0; s < n; ++s)
    if (c.instructions[first + s].op == AMK_OP_FUSED) return AMK_FAULT_OPCODE;
  for (int64_t s = 0; s < n; ++s) {
    amk_op_ctx step = c;
    step.ins = &c.instructions[first + s];
    int f = amk_dispatch_primitive(step);
    if (f) return f;
    __syncthreads();
  }
  return 0;
}

#endif /* AMK_OPS_FUSED_CUH */
