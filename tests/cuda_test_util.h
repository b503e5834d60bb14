// Helpers shared by the CUDA tests (ops_cuda_test, kernels_cuda_test, forward_cuda_test): the skip
// of GPU cases on machines without a device, and seeded random inputs.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/cuda_device.h"

// Ends a GPU test case, with a warning that says so, when no CUDA device is present.
#define QWENRT_SKIP_WITHOUT_GPU()      \
  do {                                 \
    if (!::qwenrt::CudaAvailable()) {  \
      WARN("no CUDA device: skipped"); \
      return;                          \
    }                                  \
  } while (0)

namespace qwenrt::test {

// n values uniform in [lo, hi), reproducible from `seed`.
inline std::vector<float> RandomFloats(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace qwenrt::test
