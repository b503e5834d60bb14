// One row's L2 normalisation by one warp, shared by L2NormScale (elementwise.cu) and the GDN split
// (gdn_split.cu) so both give the same bits: lane l sums x[l], x[l+32], ... in double (as
// ref::L2Norm does), a butterfly reduction gives every lane the total, then y = (x * (1 /
// max(||x||, eps))) * scale.
#pragma once

#include "common.cuh"

namespace qwenrt::cuda {

__device__ __forceinline__ double WarpSumDouble(double v) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// x, y: [n] (may alias); all 32 lanes of the warp call it with the same row.
__device__ __forceinline__ void L2NormRow(const float* x, float* y, int64_t n, float eps,
                                          float scale, int lane) {
  double sum = 0.0;
  for (int64_t i = lane; i < n; i += kWarpSize) sum += static_cast<double>(x[i] * x[i]);
  sum = WarpSumDouble(sum);
  const float inv = 1.0f / fmaxf(sqrtf(static_cast<float>(sum)), eps);
  for (int64_t i = lane; i < n; i += kWarpSize) y[i] = (x[i] * inv) * scale;
}

}  // namespace qwenrt::cuda
