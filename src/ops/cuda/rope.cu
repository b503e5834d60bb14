// Partial rotary position embedding, NEOX pairing (cuda_kernels.h), the same math as ref::Rope
// (ref/rope.cpp):
//
//   for token t, head h, pair i < R/2 (R = n_dims):  p = float(pos0 + t)
//     theta_i = p * theta_scale^i   computed iteratively in f32 (theta = p; i times theta *=
//     theta_scale) angle   = pair_uses_pos[i] ? theta_i * freq_scale : 0 (x[i], x[i + R/2]) <-
//     (x[i] cos - x[i+R/2] sin,  x[i] sin + x[i+R/2] cos)
//   theta_scale = base^(-2/R), computed on the host with the same std::pow call as ref; dims >= R
//   pass through. Precise sinf / cosf (no __sinf): angles reach ~1e5 rad at long positions.
//
// Shapes: x [T, heads, Dh], in place; pair_uses_pos [R/2] bytes on the device, or nullptr.
// Grid: grid-stride over the T*heads*(R/2) pairs, one thread per pair (consecutive threads on
// consecutive i: coalesced halves of a head). Each pair reads and writes only its own two elements.
#include <cmath>

#include "common.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

__global__ void RopeKernel(float* x, int64_t heads, int64_t Dh, int64_t pos0,
                           const int64_t* pos_dev, int64_t half, float theta_scale,
                           float freq_scale, const uint8_t* __restrict__ pair_uses_pos,
                           int64_t count) {
  if (pos_dev != nullptr) pos0 += *pos_dev;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = k % half, th = k / half;  // th = t * heads + h
    const int64_t t = th / heads;
    const float pos = static_cast<float>(pos0 + t);
    float theta = pos;
    for (int64_t j = 0; j < i; ++j) theta *= theta_scale;
    const bool rotate = pair_uses_pos == nullptr || pair_uses_pos[i] != 0;
    const float angle = rotate ? theta * freq_scale : 0.0f;
    const float c = cosf(angle), s = sinf(angle);
    float* xh = x + th * Dh;
    const float x0 = xh[i], x1 = xh[i + half];
    xh[i] = x0 * c - x1 * s;
    xh[i + half] = x0 * s + x1 * c;
  }
}

}  // namespace

Status LaunchRope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, int64_t n_dims,
                  float base, float freq_scale, const uint8_t* pair_uses_pos, Stream stream,
                  const int64_t* pos_dev) {
  if (n_dims < 0 || n_dims > Dh) {
    return CudaInvalidArgument("cuda::LaunchRope: n_dims " + std::to_string(n_dims) +
                               " outside [0, Dh=" + std::to_string(Dh) + "]");
  }
  const int64_t half = n_dims / 2;
  int64_t count = 0, elements = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchRope", {T, heads, Dh}, &elements));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchRope", {T, heads, half}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchRope", {x}));
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_dims));  // as ref::Rope
  RopeKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      x, heads, Dh, pos0, pos_dev, half, theta_scale, freq_scale, pair_uses_pos, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
