// Host-side helpers shared by the launchers of cuda_kernels.h (elementwise.cu, moe.cu, rope.cu,
// causal_conv.cu, attention.cu): argument validation that runs before any CUDA call (so bad
// arguments give INVALID_ARGUMENT even without a device) and the grid size of grid-stride loops.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "common.cuh"

namespace qwenrt::cuda {

// Threads per block of the element-wise kernels.
inline constexpr int kElementwiseThreads = 256;

// Blocks for a grid-stride loop over `n` > 0 items with `threads` per block: enough to cover n,
// capped well below the grid.x limit (2^31 - 1); the kernels loop over the rest. The cap only
// changes which thread computes an element, never how it is computed.
inline unsigned GridStrideBlocks(int64_t n, int threads = kElementwiseThreads) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 16;
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Product of non-negative dimensions into *count. INVALID_ARGUMENT naming `op` when a dimension is
// negative or the product exceeds 2^62 (element offsets must fit int64 with room to spare).
inline Status CountElements(const char* op, std::initializer_list<int64_t> dims, int64_t* count) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return CudaInvalidArgument(std::string("cuda::") + op + ": negative size " +
                                 std::to_string(d));
  }
  for (int64_t d : dims) {
    if (d == 0) {
      *count = 0;
      return OkStatus();
    }
    if (n > kLimit / d) return CudaInvalidArgument(std::string("cuda::") + op + ": size overflows");
    n *= d;
  }
  *count = n;
  return OkStatus();
}

// INVALID_ARGUMENT naming `op` unless every pointer is non-null.
inline Status CheckPointers(const char* op, std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs) {
    if (p == nullptr) return CudaInvalidArgument(std::string("cuda::") + op + ": null pointer");
  }
  return OkStatus();
}

}  // namespace qwenrt::cuda
