/* amkspec megakernel ABI image (spec §8.1–§8.3).
 *
 * Plain C/C++ (host C++ and nvcc alike; no CUDA-only construct). Every enum code,
 * capacity and the amk_params_t field order mirror amkspec.ir (enums.py, opcodes.py);
 * tests/vm_cuda/test_abi_drift.py compiles a probe that prints every size, offset and
 * enum value of this header and fails on any drift from amkspec.ir and vm_cuda.layout.
 *
 * The image is ONE contiguous byte block produced by vm_cuda.pack (the only packer):
 *   amk_image_header_t | amk_status_t | buffers[] | instructions[] (tasks, then FUSED steps)
 *   | queue_off[] | queue_len[] | queue_flat[] | counters[] | data (tensor storage)
 * Every section offset is a byte offset from the image start, 256-byte aligned.
 * amk_buffer_t.ptr holds an image-relative byte offset until vm_cuda.pack.relocate()
 * adds the image's base address (host or device): the CPU build and the GPU loader run
 * the same bytes after the same relocation.
 */
#ifndef AMK_ABI_H
#define AMK_ABI_H

#include <stdint.h>

#define AMK_ABI_VERSION_MAJOR 0
#define AMK_ABI_VERSION_MINOR 2
#define AMK_IMAGE_MAGIC 0x494B4D41u /* "AMKI" little-endian */

/* capacities: amkspec.ir.ABI_MAX_* */
#define AMK_MAX_INPUTS 8
#define AMK_MAX_OUTPUTS 4
#define AMK_MAX_WAITS 8
#define AMK_MAX_RANK 4

/* launch: threads per warp and the largest block the ops accept (amkspec.ir.WARP,
 * amkspec.ir.MAX_THREADS_PER_BLOCK; spec §5.1, O503) */
#define AMK_WARP 32
#define AMK_OP_MAX_THREADS 1024

/* section alignment of the image and of every tensor in its data section */
#define AMK_IMAGE_ALIGN 256

/* wait back-off (spec §8.4): busy spins, then sleeps doubling from MIN to MAX ns */
#define AMK_SPIN_BUSY_ITERS 64
#define AMK_BACKOFF_MIN_NS 32
#define AMK_BACKOFF_MAX_NS 4096

/* opcodes: amkspec.ir.InstructionKind */
enum amk_opcode_t {
  AMK_OP_NOP = 0,
  AMK_OP_COPY = 1,
  AMK_OP_EMBED = 2,
  AMK_OP_RMSNORM = 3,
  AMK_OP_LAYERNORM = 4,
  AMK_OP_GEMV_TILE = 5,
  AMK_OP_GEMM_TILE = 6,
  AMK_OP_ATTENTION_TILE = 7,
  AMK_OP_ROPE = 8,
  AMK_OP_SILU_MUL = 9,
  AMK_OP_GELU = 10,
  AMK_OP_ADD = 11,
  AMK_OP_MUL = 12,
  AMK_OP_DEQUANT = 13,
  AMK_OP_SOFTMAX = 14,
  AMK_OP_ALLREDUCE_SHARD = 15,
  AMK_OP_KV_APPEND = 16,
  AMK_OP_SAMPLE_ARGMAX = 17,
  AMK_OP_ATTENTION_COMBINE = 18,
  AMK_OP_FUSED = 19
};
#define AMK_N_OPCODES 20

/* element types: amkspec.ir.DType (I4 packed two per byte, low nibble first) */
enum amk_dtype_t {
  AMK_DT_F32 = 0,
  AMK_DT_F16 = 1,
  AMK_DT_BF16 = 2,
  AMK_DT_F8E4M3 = 3,
  AMK_DT_F8E5M2 = 4,
  AMK_DT_I32 = 5,
  AMK_DT_I8 = 6,
  AMK_DT_I4 = 7,
  AMK_DT_U8 = 8,
  AMK_DT_BOOL = 9,
  /* ABI-only: the dtype of a FUSED recipe scratch declared "float64" (no IR buffer has it) */
  AMK_DT_F64 = 32
};

/* memory spaces: amkspec.ir.MemSpace */
enum amk_space_t {
  AMK_SPACE_HBM = 0,
  AMK_SPACE_GLOBAL_SCRATCH = 1,
  AMK_SPACE_SMEM = 2,
  AMK_SPACE_REGISTER = 3
};

/* buffer kinds: amkspec.ir.BufferKind */
enum amk_kind_t {
  AMK_KIND_WEIGHT = 0,
  AMK_KIND_ACTIVATION = 1,
  AMK_KIND_KV_CACHE = 2,
  AMK_KIND_IO_INPUT = 3,
  AMK_KIND_IO_OUTPUT = 4,
  AMK_KIND_CONST = 5
};

/* FUSED device pattern ids (flags bits 16-31): amkspec.ir.FusedPattern */
enum amk_fused_pattern_t {
  AMK_FUSED_NONE = 0,
  AMK_FUSED_GEMV_ADD = 1
};

/* flags bits: amkspec.ir.AttentionFlags, then amkspec.ir.QuantFlags (QUANT_AFFINE: a quantized
 * GEMV/GEMM/DEQUANT reads (scale, offset) pairs, w = level * scale + offset) */
enum amk_flag_t {
  AMK_FLAG_CAUSAL = 1,
  AMK_FLAG_PARTIAL_WRITE = 2,
  AMK_FLAG_QUANT_AFFINE = 4
};

/* abort word values (amk_status_t.abort): who stopped the launch */
enum amk_abort_t {
  AMK_ABORT_NONE = 0,
  AMK_ABORT_TIMEOUT = 1, /* a block's wait passed the image's deadline (watchdog) */
  AMK_ABORT_FAULT = 2,   /* an opcode returned a nonzero AMK_FAULT_* code */
  AMK_ABORT_HOST = 3     /* the host's deadline passed: the host wrote the abort word */
};

typedef uint32_t amk_counter_t;

/* One task's scalar params: amkspec.ir.PARAM_LAYOUT order, 19 int32 then 3 float (88 bytes).
 * A param the task does not set holds its amkspec.ir.PARAM_DEFAULTS value for the opcode,
 * else 0 / 0.0f; amk_instruction_t.param_mask tells which were given or defaulted. */
typedef struct amk_params_t {
  int32_t K, N, M, N_tile, M_tile, n_off, m_off, hidden, vocab, head_dim, n_heads, n_kv_heads,
      kv_start, kv_len, pos, qdtype, group, flags, dim;
  float eps, scale, theta;
} amk_params_t;

/* One buffer (96 bytes). shape/stride: logical shape and row-major ELEMENT strides
 * (last = 1); unused trailing entries 0. I4: logical shape, storage packs each row
 * into ceil(last/2) bytes. */
typedef struct amk_buffer_t {
  void* ptr;
  int64_t numel;
  int32_t rank, dtype, space, kind;
  int64_t shape[AMK_MAX_RANK];
  int64_t stride[AMK_MAX_RANK];
} amk_buffer_t;

/* One instruction (236 bytes). inputs/outputs are buffer-table indices, wait_counter and
 * out_counter counter-table indices; unused slots 0. For FUSED, step_first/n_steps name
 * the recipe's steps: instructions[step_first .. step_first+n_steps) (after the tasks),
 * each an ordinary non-FUSED instruction with no waits whose operands are buffer-table
 * indices (task inputs, the task output, or zero-initialised scratch buffers that the
 * packer appends to the buffer table). Non-FUSED: both 0. param_mask tells a param that is 0
 * from one that is absent. */
typedef struct amk_instruction_t {
  int32_t op, n_inputs, n_outputs, n_waits;
  int32_t inputs[AMK_MAX_INPUTS];
  int32_t outputs[AMK_MAX_OUTPUTS];
  int32_t wait_counter[AMK_MAX_WAITS];
  int32_t wait_threshold[AMK_MAX_WAITS];
  int32_t out_counter, sm;
  amk_params_t params;
  int32_t step_first, n_steps;
  int32_t param_mask; /* bit i set: PARAM_LAYOUT[i] is given (or filled from PARAM_DEFAULTS) */
} amk_instruction_t;
#define AMK_HAVE_PARAM_MASK 1

/* Launch status, written by the kernel (64 bytes). The first block to stop the launch
 * claims `abort` with a compare-and-swap from 0 and alone fills the detail fields. */
typedef struct amk_status_t {
  int32_t abort;        /* amk_abort_t */
  int32_t fault_code;   /* AMK_FAULT_* from the opcode (FAULT) */
  int32_t instruction;  /* instruction index that faulted / was waiting (TIMEOUT) */
  int32_t sm;           /* block (= SM queue) that reported */
  int32_t counter;      /* TIMEOUT: counter index waited on */
  int32_t value;        /* TIMEOUT: its value when the deadline passed */
  int32_t threshold;    /* TIMEOUT: the threshold it needed */
  int32_t blocks_done;  /* blocks that finished their queue (atomicAdd) */
  int64_t executed;     /* instructions executed over all blocks */
  int64_t reserved[3];
} amk_status_t;

/* Image header (128 bytes) at byte 0 of the image. */
typedef struct amk_image_header_t {
  uint32_t magic;
  int32_t abi_major, abi_minor;
  int32_t num_sms;          /* grid size: one block per SM queue */
  int32_t n_buffers;        /* program buffers + FUSED scratch buffers */
  int32_t n_counters;
  int32_t n_instructions;   /* tasks */
  int32_t n_steps;          /* FUSED recipe steps stored after the tasks */
  int32_t threads_per_block;
  int32_t reserved0;
  int64_t image_bytes;
  int64_t timeout_ns;       /* watchdog: a wait longer than this aborts with TIMEOUT; 0 = never */
  int64_t status_off, buffers_off, instructions_off, queue_off_off, queue_len_off,
      queue_flat_off, counters_off, data_off;
  int64_t data_bytes;
} amk_image_header_t;

#ifdef __cplusplus
#define AMK_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define AMK_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
#include <stddef.h>
AMK_STATIC_ASSERT(sizeof(void*) == 8, "the ABI image needs 64-bit pointers");
AMK_STATIC_ASSERT(sizeof(amk_params_t) == 88, "amk_params_t is 88 bytes");
AMK_STATIC_ASSERT(offsetof(amk_params_t, group) == 64, "group at 64");
AMK_STATIC_ASSERT(offsetof(amk_params_t, flags) == 68, "flags at 68");
AMK_STATIC_ASSERT(offsetof(amk_params_t, eps) == 76, "eps at 76");
AMK_STATIC_ASSERT(offsetof(amk_params_t, theta) == 84, "theta at 84");
AMK_STATIC_ASSERT(sizeof(amk_buffer_t) == 96, "amk_buffer_t is 96 bytes");
AMK_STATIC_ASSERT(offsetof(amk_buffer_t, rank) == 16, "rank at 16");
AMK_STATIC_ASSERT(offsetof(amk_buffer_t, kind) == 28, "kind at 28");
AMK_STATIC_ASSERT(offsetof(amk_buffer_t, shape) == 32, "shape at 32");
AMK_STATIC_ASSERT(offsetof(amk_buffer_t, stride) == 64, "stride at 64");
AMK_STATIC_ASSERT(sizeof(amk_instruction_t) == 236, "amk_instruction_t is 236 bytes");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, param_mask) == 232, "param_mask at 232");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, inputs) == 16, "inputs at 16");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, outputs) == 48, "outputs at 48");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, wait_counter) == 64, "wait_counter at 64");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, wait_threshold) == 96, "wait_threshold at 96");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, out_counter) == 128, "out_counter at 128");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, params) == 136, "params at 136");
AMK_STATIC_ASSERT(offsetof(amk_instruction_t, step_first) == 224, "step_first at 224");
AMK_STATIC_ASSERT(sizeof(amk_status_t) == 64, "amk_status_t is 64 bytes");
AMK_STATIC_ASSERT(offsetof(amk_status_t, fault_code) == 4, "fault_code at 4");
AMK_STATIC_ASSERT(offsetof(amk_status_t, blocks_done) == 28, "blocks_done at 28");
AMK_STATIC_ASSERT(offsetof(amk_status_t, executed) == 32, "executed at 32");
AMK_STATIC_ASSERT(sizeof(amk_image_header_t) == 128, "amk_image_header_t is 128 bytes");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, num_sms) == 12, "num_sms at 12");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, image_bytes) == 40, "image_bytes at 40");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, timeout_ns) == 48, "timeout_ns at 48");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, status_off) == 56, "status_off at 56");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, buffers_off) == 64, "buffers_off at 64");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, instructions_off) == 72, "instructions_off at 72");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, queue_off_off) == 80, "queue_off_off at 80");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, queue_len_off) == 88, "queue_len_off at 88");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, queue_flat_off) == 96, "queue_flat_off at 96");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, counters_off) == 104, "counters_off at 104");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, data_off) == 112, "data_off at 112");
AMK_STATIC_ASSERT(offsetof(amk_image_header_t, data_bytes) == 120, "data_bytes at 120");

#endif /* AMK_ABI_H */
