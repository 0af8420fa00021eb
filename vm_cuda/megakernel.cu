/* The persistent megakernel (spec §8.4): one block per SM queue.
 *
 * For each instruction of its queue, block b:
 *   1. thread 0 polls the abort word, then waits until every wait holds: counters are read
 *      with device-scope acquire loads (ld.acquire.gpu; __atomic_load_n(ACQUIRE) on the CPU);
 *      AMK_SPIN_BUSY_ITERS busy spins, then __nanosleep back-off doubling from
 *      AMK_BACKOFF_MIN_NS to AMK_BACKOFF_MAX_NS; every 64 spins it polls the abort word and the
 *      watchdog (a wait longer than timeout_ns claims the abort word with TIMEOUT and records
 *      which SM waited on which counter at which value);
 *   2. __syncthreads() publishes go / stop to the block;
 *   3. every thread runs amk_dispatch (the opcode); a nonzero result claims FAULT;
 *   4. __syncthreads(); thread 0 releases: __threadfence() then atomicAdd(&counters[out], 1).
 * The same source builds for the CPU (host_shim.h: threads, a per-block futex barrier, __atomic
 * builtins).
 */
#include "abi.h"

#ifndef __CUDACC__
#include "host_shim.h"
#endif

#include "ops/ops.cuh"

/* control words at the start of each block's dynamic shared memory, before the op scratch */
#define AMK_CTL_BYTES 16
#define AMK_CTL_GO 0
#define AMK_CTL_FAULT 1

struct amk_image_view {
  amk_image_header_t* hdr;
  amk_status_t* status;
  const amk_buffer_t* buffers;
  const amk_instruction_t* instructions;
  const int32_t* queue_off;
  const int32_t* queue_len;
  const int32_t* queue_flat;
  amk_counter_t* counters;
};

__device__ inline amk_image_view amk_view(unsigned char* image) {
  amk_image_view v;
  v.hdr = reinterpret_cast<amk_image_header_t*>(image);
  v.status = reinterpret_cast<amk_status_t*>(image + v.hdr->status_off);
  v.buffers = reinterpret_cast<const amk_buffer_t*>(image + v.hdr->buffers_off);
  v.instructions = reinterpret_cast<const amk_instruction_t*>(image + v.hdr->instructions_off);
  v.queue_off = reinterpret_cast<const int32_t*>(image + v.hdr->queue_off_off);
  v.queue_len = reinterpret_cast<const int32_t*>(image + v.hdr->queue_len_off);
  v.queue_flat = reinterpret_cast<const int32_t*>(image + v.hdr->queue_flat_off);
  v.counters = reinterpret_cast<amk_counter_t*>(image + v.hdr->counters_off);
  return v;
}

#ifdef __CUDACC__
extern __shared__ __align__(16) unsigned char amk_dyn_smem[];
__device__ inline unsigned char* amk_block_smem() { return amk_dyn_smem; }
__device__ inline int64_t amk_now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return static_cast<int64_t>(t);
}
#else
inline unsigned char* amk_block_smem() { return ::amk_host::tls.block_smem; }
inline int64_t amk_now_ns() { return ::amk_host::now_ns(); }
#endif

/* Acquire load of a word other blocks write: a device-scope ld.acquire (never hoisted out of the
 * spin). A load, not an RMW, so it publishes nothing of the waiter's own: under ThreadSanitizer
 * the only happens-before edges between blocks are the protocol's release/acquire pairs. */
#ifdef __CUDACC__
__device__ inline uint32_t amk_acquire(const amk_counter_t* c) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(c) : "memory");
  return v;
}
__device__ inline int amk_acquire_int(const int32_t* p) {
  int v;
  asm volatile("ld.acquire.gpu.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
#else
inline uint32_t amk_acquire(const amk_counter_t* c) { return __atomic_load_n(c, __ATOMIC_ACQUIRE); }
inline int amk_acquire_int(const int32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
#endif

/* the first block to stop the launch claims the abort word and alone fills the detail */
__device__ inline bool amk_claim(amk_status_t* st, int reason) {
  return atomicCAS(reinterpret_cast<int*>(&st->abort), 0, reason) == 0;
}

/* Thread 0: true when every wait of `ins` holds, false when the launch is aborted. */
__device__ inline bool amk_wait_all(const amk_image_view& v, const amk_instruction_t& ins, int32_t index) {
  int64_t started = 0;
  uint32_t spins = 0, backoff = AMK_BACKOFF_MIN_NS;
  for (;;) {
    int unmet = -1;
    uint32_t value = 0;
    for (int w = 0; w < ins.n_waits; ++w) {
      value = amk_acquire(&v.counters[ins.wait_counter[w]]);
      if (value < static_cast<uint32_t>(ins.wait_threshold[w])) {
        unmet = w;
        break;
      }
    }
    if ((spins & 63u) == 0) {
      if (amk_acquire_int(&v.status->abort) != AMK_ABORT_NONE) return false;
      if (unmet >= 0 && v.hdr->timeout_ns > 0) {
        int64_t now = amk_now_ns();
        if (started == 0) started = now;
        if (now - started > v.hdr->timeout_ns) {
          if (amk_claim(v.status, AMK_ABORT_TIMEOUT)) {
            v.status->instruction = index;
            v.status->sm = static_cast<int32_t>(blockIdx.x);
            v.status->counter = ins.wait_counter[unmet];
            v.status->value = static_cast<int32_t>(value);
            v.status->threshold = ins.wait_threshold[unmet];
            __threadfence();
          }
          return false;
        }
      }
    }
    if (unmet < 0) return true;
    if (++spins > AMK_SPIN_BUSY_ITERS) {
      __nanosleep(backoff);
      backoff = backoff * 2 > AMK_BACKOFF_MAX_NS ? AMK_BACKOFF_MAX_NS : backoff * 2;
    }
  }
}

/* the block size this build is for (nvcc -DAMK_BLOCK_THREADS=T, one cubin per T): launch bounds
 * cap the registers at what one block of T threads may hold on an SM (spec §8.7) */
#ifndef AMK_BLOCK_THREADS
#define AMK_BLOCK_THREADS AMK_OP_MAX_THREADS
#endif

extern "C" __global__ void __launch_bounds__(AMK_BLOCK_THREADS, 1) amk_megakernel(unsigned char* image) {
  amk_image_view v = amk_view(image);
  int* ctl = reinterpret_cast<int*>(amk_block_smem());
  const int sm = static_cast<int>(blockIdx.x);
  if (threadIdx.x == 0) ctl[AMK_CTL_FAULT] = 0;
  __syncthreads();
  const int32_t len = sm < v.hdr->num_sms ? v.queue_len[sm] : 0;
  const int32_t* queue = v.queue_flat + (sm < v.hdr->num_sms ? v.queue_off[sm] : 0);
  int64_t executed = 0;
  for (int32_t k = 0; k < len; ++k) {
    const int32_t index = queue[k];
    const amk_instruction_t& ins = v.instructions[index];
    if (threadIdx.x == 0) ctl[AMK_CTL_GO] = amk_wait_all(v, ins, index) ? 1 : 0;
    __syncthreads();
    if (!ctl[AMK_CTL_GO]) break;
    amk_op_ctx ctx;
    ctx.buffers = v.buffers;
    ctx.n_buffers = v.hdr->n_buffers;
    ctx.ins = &ins;
    ctx.smem = amk_block_smem() + AMK_CTL_BYTES;
    ctx.smem_bytes = AMK_OP_SMEM_BYTES;
    ctx.instructions = v.instructions;
    ctx.n_instructions = v.hdr->n_instructions + v.hdr->n_steps;
    const int rc = amk_dispatch(ctx);
    if (rc != 0) atomicMax(&ctl[AMK_CTL_FAULT], rc);
    __syncthreads();
    const int fault = ctl[AMK_CTL_FAULT];
    if (threadIdx.x == 0) {
      if (fault != 0) {
        if (amk_claim(v.status, AMK_ABORT_FAULT)) {
          v.status->fault_code = fault;
          v.status->instruction = index;
          v.status->sm = sm;
          __threadfence();
        }
      } else {
        __threadfence();
        atomicAdd(&v.counters[ins.out_counter], 1u);
        ++executed;
      }
    }
    __syncthreads();
    if (fault != 0) break;
  }
  if (threadIdx.x == 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&v.status->executed),
              static_cast<unsigned long long>(executed));
    atomicAdd(&v.status->blocks_done, 1);
  }
}

#ifndef __CUDACC__
/* CPU build entry (loaded with ctypes): run the image's grid with `threads` threads per block.
 * Blocks with an empty queue get no threads (they would only count themselves done). */
extern "C" int amk_cpu_launch(unsigned char* image, int threads) {
  amk_image_view v = amk_view(image);
  if (v.hdr->magic != AMK_IMAGE_MAGIC || v.hdr->abi_major != AMK_ABI_VERSION_MAJOR) return 1;
  if (threads < 1) return 2;
  const unsigned grid = static_cast<unsigned>(v.hdr->num_sms);
  int idle = 0;
  for (unsigned b = 0; b < grid; ++b) idle += v.queue_len[b] == 0;
  ::amk_host::launch(grid, static_cast<unsigned>(threads), AMK_CTL_BYTES + AMK_OP_SMEM_BYTES,
                     [&v](unsigned b) { return v.queue_len[b] > 0; }, [image]() { amk_megakernel(image); });
  v.status->blocks_done += idle;
  return 0;
}

/* the ABI the library was compiled against (the loader checks it before any launch) */
extern "C" int amk_abi_sizes(int64_t* out, int n) {
  const int64_t sizes[] = {sizeof(amk_params_t), sizeof(amk_buffer_t), sizeof(amk_instruction_t),
                           sizeof(amk_status_t), sizeof(amk_image_header_t),
                           AMK_ABI_VERSION_MAJOR * 100 + AMK_ABI_VERSION_MINOR};
  const int count = static_cast<int>(sizeof(sizes) / sizeof(sizes[0]));
  for (int i = 0; i < n && i < count; ++i) out[i] = sizes[i];
  return count;
}
#endif
