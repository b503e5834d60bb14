// The step of a Gated DeltaNet layer between the conv and the delta rule (cuda_kernels.h,
// LaunchGdnSplit), one launch instead of four: per token t,
//   q[t][h] = L2Norm(conv[t][h*Dk ..]) * q_scale         h < Hk
//   k[t][h] = L2Norm(conv[t][Hk*Dk + h*Dk ..])            h < Hk
//   v[t][h] = conv[t][2*Hk*Dk + h*Dv ..]                  h < Hv
//   alpha[t][h] = ssm_a[h] * softplus(alpha[t][h] + dt_bias[h]),  beta[t][h] = sigmoid(beta[t][h])
// Same bits as LaunchL2NormScaleRows x2 + LaunchCopyColumns + LaunchGdnGates (the row code is
// shared, l2_norm_row.cuh; the gate formulas are activations.cuh's). Grid: one warp per job, 8
// warps per block, grid-stride over T * (2*Hk + Hv + 1) jobs.
#include "activations.cuh"
#include "common.cuh"
#include "l2_norm_row.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

constexpr int kSplitWarps = kElementwiseThreads / kWarpSize;

__global__ void __launch_bounds__(kElementwiseThreads)
    GdnSplitKernel(const float* __restrict__ conv, int64_t T, int64_t Hk, int64_t Dk, int64_t Hv,
                   int64_t Dv, float eps, float q_scale, float* __restrict__ q,
                   float* __restrict__ k, float* __restrict__ v, float* alpha, float* beta,
                   const float* __restrict__ ssm_a, const float* __restrict__ dt_bias) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t jobs = 2 * Hk + Hv + 1, C = 2 * Hk * Dk + Hv * Dv;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kSplitWarps + threadIdx.x / kWarpSize;
  for (int64_t w = first; w < T * jobs;
       w += static_cast<int64_t>(gridDim.x) * kSplitWarps) {  // warp-uniform
    const int64_t t = w / jobs, j = w % jobs;
    const float* row = conv + t * C;
    if (j < Hk) {
      L2NormRow(row + j * Dk, q + (t * Hk + j) * Dk, Dk, eps, q_scale, lane);
    } else if (j < 2 * Hk) {
      L2NormRow(row + Hk * Dk + (j - Hk) * Dk, k + (t * Hk + j - Hk) * Dk, Dk, eps, 1.0f, lane);
    } else if (j < 2 * Hk + Hv) {
      const float* src = row + 2 * Hk * Dk + (j - 2 * Hk) * Dv;
      float* dst = v + (t * Hv + j - 2 * Hk) * Dv;
      for (int64_t i = lane; i < Dv; i += kWarpSize) dst[i] = src[i];
    } else {
      for (int64_t h = lane; h < Hv; h += kWarpSize) {
        float& a = alpha[t * Hv + h];
        a = ssm_a[h] * DevSoftplus(a + dt_bias[h]);
        float& b = beta[t * Hv + h];
        b = DevSigmoid(b);
      }
    }
  }
}

}  // namespace

Status LaunchGdnSplit(const float* conv, int64_t T, int64_t Hk, int64_t Dk, int64_t Hv, int64_t Dv,
                      float eps, float q_scale, float* q, float* k, float* v, float* alpha,
                      float* beta, const float* ssm_a, const float* dt_bias, Stream stream) {
  int64_t jobs = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchGdnSplit", {T, 2 * Hk + Hv + 1}, &jobs));
  if (Hk < 1 || Dk < 1 || Hv < 1 || Dv < 1)
    return CudaInvalidArgument("cuda::LaunchGdnSplit: bad shape");
  if (T == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(
      CheckPointers("LaunchGdnSplit", {conv, q, k, v, alpha, beta, ssm_a, dt_bias}));
  GdnSplitKernel<<<GridStrideBlocks(jobs, kSplitWarps), kElementwiseThreads, 0, AsCuda(stream)>>>(
      conv, T, Hk, Dk, Hv, Dv, eps, q_scale, q, k, v, alpha, beta, ssm_a, dt_bias);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
