// Mixture-of-experts data movement and combination (cuda_kernels.h), mirroring the Moe() step of
// forward.cpp:
//
//   MoeGather         dst[i][e] = src[rows[i]][e]                 src: [*, E]; rows: [n]; dst: [n,
//   E] MoeScatter        dst[rows[i]][e] = src[i][e]                 src: [n, E]; dst: [*, E]
//   MoeCombine        mix[t][e] = sum_{j=0}^{K-1} weights[t][j] * yslot[t][j][e]   (j ascending,
//                     from 0.0f, the same accumulation as forward.cpp)
//                     yslot: [T, K, E]; weights: [T, K]; mix: [T, E]
//   AddSigmoidGated   mix[t][e] += sigmoid(gate[t]) * y[t][e]     mix, y: [T, E]; gate: [T]
//
// Grid: grid-stride loops over the n*E (or T*E) output elements, 256 threads per block, so
// consecutive threads touch consecutive e (coalesced). The row indices are device data and are not
// checked: they must lie inside src (gather) / dst (scatter), and a scatter's rows must be
// distinct.
#include "activations.cuh"
#include "common.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

__global__ void MoeGatherKernel(const float* __restrict__ src, const int32_t* __restrict__ rows,
                                int64_t E, float* __restrict__ dst, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / E, e = i % E;
    dst[i] = src[static_cast<int64_t>(rows[r]) * E + e];
  }
}

__global__ void MoeScatterKernel(const float* __restrict__ src, const int32_t* __restrict__ rows,
                                 int64_t E, float* __restrict__ dst, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / E, e = i % E;
    dst[static_cast<int64_t>(rows[r]) * E + e] = src[i];
  }
}

__global__ void MoeCombineKernel(const float* __restrict__ yslot, const float* __restrict__ weights,
                                 int64_t K, int64_t E, float* __restrict__ mix, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / E, e = i % E;
    float acc = 0.0f;
    for (int64_t j = 0; j < K; ++j) acc += weights[t * K + j] * yslot[(t * K + j) * E + e];
    mix[i] = acc;
  }
}

__global__ void AddSigmoidGatedKernel(float* mix, const float* __restrict__ y,
                                      const float* __restrict__ gate, int64_t E, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float gamma = DevSigmoid(gate[i / E]);
    mix[i] += gamma * y[i];
  }
}

}  // namespace

Status LaunchMoeGather(const float* src, const int32_t* rows, int64_t n, int64_t E, float* dst,
                       Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMoeGather", {n, E}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMoeGather", {src, rows, dst}));
  MoeGatherKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(src, rows, E,
                                                                                       dst, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchMoeScatter(const float* src, const int32_t* rows, int64_t n, int64_t E, float* dst,
                        Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMoeScatter", {n, E}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMoeScatter", {src, rows, dst}));
  MoeScatterKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      src, rows, E, dst, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchMoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                        float* mix, Stream stream) {
  int64_t count = 0, slots = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMoeCombine", {T, E}, &count));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMoeCombine", {T, K, E}, &slots));
  if (count == 0) return OkStatus();
  // K == 0 is legal (mix = 0) and reads neither yslot nor weights.
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMoeCombine", {mix}));
  if (K > 0) QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMoeCombine", {yslot, weights}));
  MoeCombineKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      yslot, weights, K, E, mix, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchAddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E,
                             Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAddSigmoidGated", {T, E}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchAddSigmoidGated", {mix, y, gate}));
  AddSigmoidGatedKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      mix, y, gate, E, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
