// CUDA device discovery for cuda_device.h: whether a device is usable, and its name.
#include <cstdio>

#include "common.cuh"
#include "ops/cuda_device.h"

namespace qwenrt {

bool CudaAvailable() {
  // Function-local static: initialised once, thread-safe; the device set does not change under us.
  static const bool available = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the (non-sticky) error so later calls start clean
      return false;
    }
    return n > 0;
  }();
  return available;
}

StatusOr<std::string> CudaDeviceName() {
  int dev = 0;
  QWENRT_CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  QWENRT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  char buf[320];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(buf);
}

}  // namespace qwenrt
