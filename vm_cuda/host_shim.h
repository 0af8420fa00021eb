/* CPU build of the CUDA megakernel (spec §8.6): maps the CUDA constructs the kernel and the
 * opcodes use onto C++ threads, barriers and atomics. Included only when __CUDACC__ is not
 * defined (g++ / clang++, C++20). One std::thread per CUDA thread; the threads of one block
 * share a futex-backed barrier (__syncthreads) and a heap scratch area (the block's dynamic shared
 * memory); every block of the grid runs at once, as under a cooperative launch.
 *
 * Atomics use the __atomic builtins with sequentially consistent order, and the kernel's acquire
 * is an acquire load (megakernel.cu amk_acquire: __atomic_load_n(c, __ATOMIC_ACQUIRE)), so
 * ThreadSanitizer sees the release (fence + atomicAdd) / acquire (acquire load) pairs of the
 * protocol.
 * __shared__ is deliberately not provided: opcodes communicate through ctx.smem only.
 */
#ifndef AMK_HOST_SHIM_H
#define AMK_HOST_SHIM_H
#ifndef __CUDACC__

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ AMK_SHARED_IS_NOT_AVAILABLE_IN_THE_CPU_BUILD_USE_CTX_SMEM

struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

namespace amk_host {

/* The barrier of one block (__syncthreads). Its only shared state is its own two atomics (no
 * global waiter table, unlike std::barrier), so ThreadSanitizer sees no happens-before edge
 * between blocks that the protocol does not create. Waiters spin briefly, then sleep on a futex. */
class BlockBarrier {
 public:
  explicit BlockBarrier(unsigned n) : n_(n) {}
  void arrive_and_wait() {
    const unsigned gen = __atomic_load_n(&gen_, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&count_, 1u, __ATOMIC_ACQ_REL) == n_) {
      __atomic_store_n(&count_, 0u, __ATOMIC_RELAXED);
      __atomic_add_fetch(&gen_, 1u, __ATOMIC_RELEASE);
      wake();
      return;
    }
    for (unsigned spins = 0; __atomic_load_n(&gen_, __ATOMIC_ACQUIRE) == gen; ++spins) {
      if (spins < 64)
        std::this_thread::yield();
      else
        sleep(gen);
    }
  }

 private:
#ifdef __linux__
  void wake() { syscall(SYS_futex, &gen_, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0); }
  void sleep(unsigned gen) { syscall(SYS_futex, &gen_, FUTEX_WAIT_PRIVATE, gen, nullptr, nullptr, 0); }
#else
  void wake() {}
  void sleep(unsigned) { std::this_thread::yield(); }
#endif
  const unsigned n_;
  unsigned count_ = 0;
  unsigned gen_ = 0;
};

/* What one emulated CUDA thread knows about itself. */
struct ThreadState {
  dim3 threadIdx, blockIdx, blockDim, gridDim;
  BlockBarrier* block_barrier = nullptr;
  BlockBarrier* warp_barrier = nullptr; /* the threads of its warp (32, or what the block has left) */
  float* warp_slots = nullptr;          /* one float per thread of the block: the warp exchange */
  unsigned char* block_smem = nullptr;
};

inline thread_local ThreadState tls;

/* Run kernel(args) on `grid` blocks of `block` threads, all co-resident; only the blocks for
 * which active(b) is true get threads (an inactive block must be one that would do nothing).
 * Each block gets `smem_bytes` of zeroed scratch. Returns after every thread has finished. */
template <class Kernel>
void launch(unsigned grid, unsigned block, size_t smem_bytes, const std::function<bool(unsigned)>& active,
            Kernel kernel) {
  struct Block {
    BlockBarrier bar;
    std::vector<unsigned char> smem;
    std::vector<std::unique_ptr<BlockBarrier>> warps;
    std::vector<float> slots;
    Block(unsigned n, size_t bytes) : bar(n), smem(bytes + 16, 0), slots(n, 0.0f) {
      for (unsigned w = 0; w < n; w += 32) warps.push_back(std::make_unique<BlockBarrier>(n - w < 32 ? n - w : 32));
    }
  };
  std::vector<std::unique_ptr<Block>> blocks;
  std::vector<std::thread> threads;
  for (unsigned b = 0; b < grid; ++b) {
    if (!active(b)) continue;
    blocks.push_back(std::make_unique<Block>(block, smem_bytes));
    Block* blk = blocks.back().get();
    for (unsigned t = 0; t < block; ++t) {
      threads.emplace_back([=, &kernel]() {
        tls.threadIdx = dim3{t, 1, 1};
        tls.blockIdx = dim3{b, 1, 1};
        tls.blockDim = dim3{block, 1, 1};
        tls.gridDim = dim3{grid, 1, 1};
        tls.block_barrier = &blk->bar;
        tls.warp_barrier = blk->warps[t / 32].get();
        tls.warp_slots = blk->slots.data();
        tls.block_smem = blk->smem.data();
        kernel();
      });
    }
  }
  for (auto& th : threads) th.join();
}

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace amk_host

#define threadIdx (::amk_host::tls.threadIdx)
#define blockIdx (::amk_host::tls.blockIdx)
#define blockDim (::amk_host::tls.blockDim)
#define gridDim (::amk_host::tls.gridDim)

inline void __syncthreads() { ::amk_host::tls.block_barrier->arrive_and_wait(); }

/* The sum of v over the calling thread's warp (every thread of the warp calls it), in lane order:
 * the CPU build's stand-in for the GPU's shuffle butterfly (vm_cuda/ops/common.cuh amk_warp_sum). */
inline float amk_host_warp_sum(float v) {
  ::amk_host::ThreadState& s = ::amk_host::tls;
  const unsigned t = threadIdx.x, first = t / 32 * 32;
  const unsigned lanes = blockDim.x - first < 32 ? blockDim.x - first : 32;
  s.warp_slots[t] = v;
  s.warp_barrier->arrive_and_wait();
  float total = 0.0f;
  for (unsigned i = 0; i < lanes; ++i) total += s.warp_slots[first + i];
  s.warp_barrier->arrive_and_wait();
  return total;
}
#if defined(__SANITIZE_THREAD__)
#define AMK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AMK_TSAN 1
#endif
#endif
#ifdef AMK_TSAN
/* ThreadSanitizer cannot model standalone fences. Every atomic of this shim is a sequentially
 * consistent RMW, so the release the protocol needs is carried by the atomicAdd that follows the
 * fence; TSan checks exactly that pairing (fence + relaxed atomicAdd is the GPU's form). */
inline void __threadfence() {}
inline void __threadfence_block() {}
#else
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
inline void __nanosleep(unsigned ns) {
  if (ns < 1000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

/* integer atomics: return the old value, as CUDA's do */
template <class T>
inline T atomicAdd(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline float atomicAdd(float* p, float v) {
  uint32_t cur = __atomic_load_n(reinterpret_cast<uint32_t*>(p), __ATOMIC_SEQ_CST);
  for (;;) {
    float f;
    std::memcpy(&f, &cur, 4);
    float nf = f + v;
    uint32_t next;
    std::memcpy(&next, &nf, 4);
    if (__atomic_compare_exchange_n(reinterpret_cast<uint32_t*>(p), &cur, next, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      return f;
  }
}
template <class T>
inline T atomicExch(T* p, T v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
template <class T>
inline T atomicMax(T* p, T v) {
  T cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return cur;
}
template <class T>
inline T atomicMin(T* p, T v) {
  T cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (cur > v && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return cur;
}
template <class T>
inline T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected; /* the old value: `expected` is overwritten with it on failure */
}
template <class T>
inline T atomicOr(T* p, T v) {
  return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}

/* fast-math intrinsics → <cmath> (the CPU build computes them exactly) */
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

#endif /* !__CUDACC__ */
#endif /* AMK_HOST_SHIM_H */
