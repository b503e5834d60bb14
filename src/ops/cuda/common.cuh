// Shared CUDA helpers for the kernels in cuda/: QWENRT_CUDA_TRY (a failed CUDA runtime call
// becomes a DEVICE Status, never an exit or abort), warp reductions, a move-only device buffer and
// a launch timer. Only included by .cu files; no CUDA header leaves cuda/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "base/status.h"

namespace qwenrt::cuda {

inline bool IsOk(cudaError_t e) { return e == cudaSuccess; }

// "cudaMalloc(&p, n) failed at cuda/x.cu:12: cudaErrorMemoryAllocation (out of memory)".
// Messages are built without fmt: fmt 9's consteval format strings do not compile under nvcc.
inline Status CudaCallError(cudaError_t e, const char* expr, const char* file, int line) {
  return Status(StatusCode::kDevice, std::string(expr) + " failed at " + file + ":" +
                                         std::to_string(line) + ": " + cudaGetErrorName(e) + " (" +
                                         cudaGetErrorString(e) + ")");
}
// The cudaStream_t behind cuda_kernels.h's opaque Stream (a void*).
inline cudaStream_t AsCuda(void* stream) { return static_cast<cudaStream_t>(stream); }

inline Status CudaInvalidArgument(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

}  // namespace qwenrt::cuda

// Evaluates a cudaError_t expression once and returns a DEVICE Status from the
// enclosing function (which returns Status or StatusOr<T>) when it failed.
#define QWENRT_CUDA_TRY(expr)                                                            \
  do {                                                                                   \
    const auto qwenrt_cuda_rc_ = (expr);                                                 \
    if (!::qwenrt::cuda::IsOk(qwenrt_cuda_rc_)) {                                        \
      cudaGetLastError(); /* clear a non-sticky error so the next launch starts clean */ \
      return ::qwenrt::cuda::CudaCallError(qwenrt_cuda_rc_, #expr, __FILE__, __LINE__);  \
    }                                                                                    \
  } while (0)

namespace qwenrt::cuda {

inline constexpr int kWarpSize = 32;

// Sum over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Move-only owner of a cudaMalloc'd allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Free();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  ~DeviceBuffer() { Free(); }

  Status Allocate(size_t bytes) {
    Free();
    QWENRT_CUDA_TRY(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));
    bytes_ = bytes;
    return OkStatus();
  }
  // Allocates `bytes` and copies them from host memory.
  Status Upload(const void* host, size_t bytes) {
    QWENRT_RETURN_IF_ERROR(Allocate(bytes));
    if (bytes != 0) QWENRT_CUDA_TRY(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
    return OkStatus();
  }
  Status Download(void* host, size_t bytes) const {
    if (bytes != 0) QWENRT_CUDA_TRY(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
    return OkStatus();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void Free() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Times `iters` calls of `launch` (a callable returning Status) on the default stream with CUDA
// events, after one untimed warm-up call; *ms = mean milliseconds per call.
template <typename Launch>
Status TimeLaunches(int iters, Launch&& launch, double* ms) {
  QWENRT_RETURN_IF_ERROR(launch());
  cudaEvent_t start = nullptr, stop = nullptr;
  QWENRT_CUDA_TRY(cudaEventCreate(&start));
  Status st = [&]() -> Status {
    QWENRT_CUDA_TRY(cudaEventCreate(&stop));
    QWENRT_CUDA_TRY(cudaEventRecord(start));
    for (int i = 0; i < iters; ++i) QWENRT_RETURN_IF_ERROR(launch());
    QWENRT_CUDA_TRY(cudaEventRecord(stop));
    QWENRT_CUDA_TRY(cudaEventSynchronize(stop));
    float total = 0.0f;
    QWENRT_CUDA_TRY(cudaEventElapsedTime(&total, start, stop));
    *ms = iters > 0 ? static_cast<double>(total) / iters : 0.0;
    return OkStatus();
  }();
  cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  return st;
}

}  // namespace qwenrt::cuda
