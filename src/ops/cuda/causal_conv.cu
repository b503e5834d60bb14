// Causal depthwise convolution + SiLU with the rolling conv state (cuda_kernels.h), the same math
// as ref::CausalConvSilu (conv.h, ref/conv.cpp):
//
//   u_t[c] = sum_{j=0}^{Kc-1} w[c][j] * x_{t-(Kc-1)+j}[c]      (j ascending, from 0.0f)
//   y_t[c] = u / (1 + exp(-u))
//   x_tau for tau < 0 is state[c][Kc-1+tau] (the Kc-1 inputs before token 0, oldest first);
//   afterwards state[c][j] = x_{T-(Kc-1)+j}[c], taken from the old state when T < Kc-1.
//
// Shapes: x [T, C]; w [C, Kc]; state [C, Kc-1]; y [T, C] (must not alias x or state).
// Grid: two kernels on the stream. ConvOutputs: grid-stride over the T*C outputs, one thread per
// (t, c), consecutive threads on consecutive channels (coalesced rows of x and y); every thread
// reads the state as it was before the call. ConvState then runs (stream order) with one thread per
// channel, updating its Kc-1 entries in ascending j exactly as ref does (entry j reads old entry
// j+T > j when it comes from the state, so nothing is read after being overwritten).
// Each y_t[c] depends only on the inputs x_{t-Kc+1..t}[c] (wherever they are stored), so running T
// tokens at once or in pieces gives bit-identical outputs and state.
#include "activations.cuh"
#include "common.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

// Input of channel c at token tau >= -(Kc-1): from x, or from the state before the call.
__device__ __forceinline__ float ConvInput(const float* x, const float* st, int64_t C, int64_t K1,
                                           int64_t c, int64_t tau) {
  return tau >= 0 ? x[tau * C + c] : st[K1 + tau];
}

__global__ void ConvOutputsKernel(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ state, float* __restrict__ y, int64_t C,
                                  int64_t Kc, int64_t count) {
  const int64_t K1 = Kc - 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / C, c = i % C;
    const float* st = state + c * K1;
    const float* wc = w + c * Kc;
    float u = 0.0f;
    for (int64_t j = 0; j < Kc; ++j) u += wc[j] * ConvInput(x, st, C, K1, c, t - K1 + j);
    y[i] = DevSilu(u);
  }
}

__global__ void ConvStateKernel(const float* __restrict__ x, float* state, int64_t T, int64_t C,
                                int64_t K1) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < C;
       c += int64_t{gridDim.x} * blockDim.x) {
    float* st = state + c * K1;
    for (int64_t j = 0; j < K1; ++j) st[j] = ConvInput(x, st, C, K1, c, T - K1 + j);
  }
}

}  // namespace

Status LaunchCausalConvSilu(const CausalConvShape& shape, const float* x, const float* w,
                            float* state, float* y, Stream stream) {
  const int64_t T = shape.T, C = shape.C, Kc = shape.Kc;
  if (T < 0 || C < 1 || Kc < 1) {
    return CudaInvalidArgument("cuda::LaunchCausalConvSilu: bad shape T=" + std::to_string(T) +
                               " C=" + std::to_string(C) + " Kc=" + std::to_string(Kc));
  }
  int64_t count = 0, taps = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchCausalConvSilu", {T, C}, &count));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchCausalConvSilu", {C, Kc}, &taps));
  if (count == 0) return OkStatus();  // T == 0: state unchanged
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchCausalConvSilu", {x, w, y}));
  if (Kc > 1) QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchCausalConvSilu", {state}));
  const cudaStream_t s = AsCuda(stream);
  ConvOutputsKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, s>>>(x, w, state, y, C, Kc,
                                                                            count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  if (Kc > 1) {
    ConvStateKernel<<<GridStrideBlocks(C), kElementwiseThreads, 0, s>>>(x, state, T, C, Kc - 1);
    QWENRT_CUDA_TRY(cudaGetLastError());
  }
  return OkStatus();
}

}  // namespace qwenrt::cuda
