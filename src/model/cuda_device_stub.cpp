// Stand-ins for the CUDA entry points (cuda_device.h, cuda_ops.h, forward_cuda.h, cuda_weights.h)
// when qwenrt is built without CUDA: nothing is available and every op returns UNSUPPORTED, so
// callers need no #ifdefs.
#ifndef QWENRT_HAVE_CUDA

#include "model/cuda_weights.h"
#include "model/forward_cuda.h"
#include "ops/cuda_device.h"
#include "ops/cuda_ops.h"

namespace qwenrt {

bool CudaAvailable() { return false; }

StatusOr<std::string> CudaDeviceName() { return Unsupported("qwenrt was built without CUDA"); }

StatusOr<std::unique_ptr<CudaForward>> CudaForward::Create(const Model&, const Options&) {
  return Unsupported("the CUDA backend is not available: qwenrt was built without CUDA");
}

StatusOr<std::shared_ptr<const CudaWeights>> CudaWeights::Upload(const Model&) {
  return Unsupported("CUDA weights: qwenrt was built without CUDA");
}

namespace cuda {

Status RmsNorm(const float*, const float*, float*, int64_t, int64_t, float, KernelTiming*) {
  return Unsupported("cuda::RmsNorm: qwenrt was built without CUDA");
}

Status DequantMatVec(const WeightMatrix&, const float*, float*, int64_t, KernelTiming*) {
  return Unsupported("cuda::DequantMatVec: qwenrt was built without CUDA");
}

Status GatedDeltaRecurrent(const GatedDeltaShape&, const float*, const float*, const float*,
                           const float*, const float*, float*, float*, KernelTiming*) {
  return Unsupported("cuda::GatedDeltaRecurrent: qwenrt was built without CUDA");
}

}  // namespace cuda
}  // namespace qwenrt

#endif  // QWENRT_HAVE_CUDA
