/* A stand-in CUDA driver for the runtime's tests (tests/vm_cuda/test_cuda_runtime.py).
 *
 * Compiled against NVIDIA's own cuda.h, so every function has the real prototype and the real
 * exported symbol (cuMemAlloc is cuMemAlloc_v2, ...): the runtime's ctypes declarations are
 * exercised as they would be against libcuda. "Device" memory is host memory; a cooperative
 * launch runs the megakernel's CPU build (fake_set_kernel) on the image in a thread, so events
 * are NOT_READY while it runs and a host abort written with cuMemcpyHtoDAsync really stops it.
 * Every call is recorded (fake_log); fake_inject makes the next call of a function fail.
 */
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace {
std::mutex mu;
std::string calls;
std::map<std::string, int> injected;  // function -> CUresult of its next call
std::map<int, int> attributes = {{95, 1}, {16, 2}, {75, 9}, {76, 0}, {97, 232448}, {39, 2048}, {82, 65536},
                                 {38, 52428800}, {13, 1980000}};
int occupancy = 1;
int registers = 64;
int (*kernel)(unsigned char*, int) = nullptr;
std::thread launch_thread;
std::atomic<bool> running{false};
std::atomic<bool> hang{false};
std::atomic<bool> released{false};

void record(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void record(const char* fmt, ...) {
  char line[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(mu);
  calls += line;
  calls += "\n";
}

/* the injected result of `name`'s call, if any (consumed), else CUDA_SUCCESS */
CUresult take(const char* name) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = injected.find(name);
  if (it == injected.end()) return CUDA_SUCCESS;
  CUresult rc = static_cast<CUresult>(it->second);
  injected.erase(it);
  return rc;
}

void join_launch() {
  if (launch_thread.joinable()) launch_thread.join();
}
}  // namespace

#define FAKE_CALL(name)                       \
  do {                                        \
    CUresult injected_rc = take(name);        \
    if (injected_rc != CUDA_SUCCESS) return injected_rc; \
  } while (0)

extern "C" {
/* test controls */
void fake_reset() {
  join_launch();
  std::lock_guard<std::mutex> lock(mu);
  calls.clear();
  injected.clear();
  occupancy = 1;
  registers = 64;
  attributes[95] = 1;
  hang = false;
  released = false;
}
const char* fake_log() { return calls.c_str(); }
void fake_inject(const char* name, int rc) {
  std::lock_guard<std::mutex> lock(mu);
  injected[name] = rc;
}
void fake_set_attribute(int attribute, int value) { attributes[attribute] = value; }
void fake_set_occupancy(int blocks) { occupancy = blocks; }
void fake_set_hang(int on) { hang = on != 0; }
int fake_set_kernel(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 1;
  kernel = reinterpret_cast<int (*)(unsigned char*, int)>(dlsym(lib, "amk_cpu_launch"));
  return kernel ? 0 : 2;
}
}

CUresult cuInit(unsigned int flags) {
  record("cuInit %u", flags);
  return take("cuInit");
}
CUresult cuDriverGetVersion(int* v) {
  FAKE_CALL("cuDriverGetVersion");
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* n) {
  FAKE_CALL("cuDeviceGetCount");
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  record("cuDeviceGet %d", ordinal);
  FAKE_CALL("cuDeviceGet");
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  record("cuDeviceGetAttribute %d %d", static_cast<int>(attrib), dev);
  FAKE_CALL("cuDeviceGetAttribute");
  auto it = attributes.find(static_cast<int>(attrib));
  if (it == attributes.end()) return CUDA_ERROR_INVALID_VALUE;
  *pi = it->second;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  snprintf(name, static_cast<size_t>(len), "Fake GPU");
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t(1) << 34;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  record("cuDevicePrimaryCtxRetain %d", dev);
  FAKE_CALL("cuDevicePrimaryCtxRetain");
  *ctx = reinterpret_cast<CUcontext>(0xC0);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  record("cuDevicePrimaryCtxRelease %d", dev);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  record("cuDevicePrimaryCtxReset %d", dev);
  released = true;  /* a reset ends whatever the device was running */
  join_launch();
  running = false;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_CALL("cuCtxSetCurrent");
  return ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  record("cuModuleLoadData %.4s", static_cast<const char*>(image));
  FAKE_CALL("cuModuleLoadData");
  *module = reinterpret_cast<CUmodule>(0x30);
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  record("cuModuleGetFunction %s", name);
  *f = reinterpret_cast<CUfunction>(0xF0);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) {
  record("cuModuleUnload");
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute attrib, int value) {
  record("cuFuncSetAttribute %d %d", static_cast<int>(attrib), value);
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction) {
  *pi = attrib == CU_FUNC_ATTRIBUTE_NUM_REGS ? registers : 0;
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction, int block, size_t smem) {
  record("cuOccupancyMaxActiveBlocksPerMultiprocessor %d %zu", block, smem);
  *n = occupancy;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr* p, size_t n) {
  FAKE_CALL("cuMemAlloc");
  void* mem = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!mem) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(mem);
  record("cuMemAlloc %zu", n);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
  join_launch();
  free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned int) {
  *p = aligned_alloc(256, (n + 255) / 256 * 256);
  record("cuMemHostAlloc %zu", n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void* p) {
  free(p);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream stream) {
  record("cuMemcpyHtoDAsync %zu %p", n, static_cast<void*>(stream));
  FAKE_CALL("cuMemcpyHtoDAsync");
  memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream) {
  record("cuMemcpyDtoHAsync %zu", n);
  FAKE_CALL("cuMemcpyDtoHAsync");
  memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream) {
  record("cuMemsetD8Async %zu", n);
  memset(reinterpret_cast<void*>(dst), value, n);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  static uintptr_t next = 0x100;
  record("cuStreamCreate %u", flags);
  *s = reinterpret_cast<CUstream>(next++);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) {
  FAKE_CALL("cuStreamSynchronize");
  if (!hang) join_launch();
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent* e, unsigned int) {
  static uintptr_t next = 0x200;
  *e = reinterpret_cast<CUevent>(next++);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventQuery(CUevent) {
  FAKE_CALL("cuEventQuery");
  if (running) return CUDA_ERROR_NOT_READY;
  join_launch();
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 0.5f;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned smem, CUstream stream, void** params) {
  record("cuLaunchCooperativeKernel %u %u %u %u %u %u %u %p", gx, gy, gz, bx, by, bz, smem,
         static_cast<void*>(stream));
  FAKE_CALL("cuLaunchCooperativeKernel");
  if (!kernel || !params) return CUDA_ERROR_INVALID_VALUE;
  unsigned char* image = *static_cast<unsigned char**>(params[0]);
  join_launch();
  running = true;
  launch_thread = std::thread([image, bx]() {
    kernel(image, static_cast<int>(bx));
    while (hang && !released) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    running = false;
  });
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: *text = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_LAUNCH_TIMEOUT: *text = "CUDA_ERROR_LAUNCH_TIMEOUT"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *text = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: *text = "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"; return CUDA_SUCCESS;
    default: *text = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
