// Device versions of the scalar activations of ref/ops.h, written with the same operations in the
// same order (precise expf / logf, IEEE division: the build uses no fast-math), so a kernel and its
// ref:: op differ only by the last-ulp differences of expf / logf between CUDA and glibc.
#pragma once

namespace qwenrt::cuda {

__device__ __forceinline__ float DevSigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float DevSilu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float DevSoftplus(float x) {  // as ggml: identity above 20
  return x > 20.0f ? x : logf(1.0f + expf(x));
}

}  // namespace qwenrt::cuda
