// Element-wise and per-row kernels of the device-resident forward pass (cuda_kernels.h), each the
// same math as its ref:: op (ref/ops.h):
//
//   L2NormScale  x[r] = (x[r] * (1 / max(||x[r]||, eps))) * scale      x: [rows, n], in place
//                (ref::L2Norm followed by the forward pass's q scaling; the sum of squares is
//                accumulated in double from f32 squares, as ref does)
//   Add          x += y                                                  [n]
//   SwiGlu       up = silu(gate) * up                                    [n]
//   MulSigmoid   x *= sigmoid(gate)                                      [n]
//   GdnGates     alpha = ssm_a[h] * softplus(alpha + dt_bias[h]),        alpha, beta: [T, Hv]
//                beta = sigmoid(beta)                                    ssm_a, dt_bias: [Hv]
//   CopyColumns  dst[r][c] = src[r][offset + c], c < width               src: [rows, src_stride]
//
// Grid: element-wise ops use a grid-stride loop, 256 threads per block (launch_util.cuh), one
// thread per element per iteration. L2NormScale uses one warp per row (8 rows per block,
// grid-stride over rows): lane l sums elements l, l+32, ... in double, then a butterfly reduction
// gives every lane the same total. Each element's result depends only on its own inputs (and for
// L2NormScale on its row, reduced in a fixed order), never on the launch size.
#include <cmath>

#include "activations.cuh"
#include "common.cuh"
#include "l2_norm_row.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

constexpr int kL2RowsPerBlock = kElementwiseThreads / kWarpSize;

__global__ void __launch_bounds__(kElementwiseThreads)
    L2NormScaleKernel(const float* src, int64_t src_token_stride, int64_t heads, float* dst,
                      int64_t rows, int64_t n, float eps, float scale) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * kL2RowsPerBlock + threadIdx.x / kWarpSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kL2RowsPerBlock;
  for (int64_t r = first; r < rows; r += stride) {  // warp-uniform loop; r = t * heads + h
    L2NormRow(src + (r / heads) * src_token_stride + (r % heads) * n, dst + r * n, n, eps, scale,
              lane);
  }
}

__global__ void AddKernel(float* x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] += y[i];
  }
}

__global__ void SwiGluKernel(const float* __restrict__ gate, float* up, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    up[i] = DevSilu(gate[i]) * up[i];
  }
}

// x[r][c] *= sigmoid(gate[r * gate_stride + c]) for rows of `width` (width = n, stride = n: flat).
__global__ void MulSigmoidKernel(float* x, const float* __restrict__ gate, int64_t width,
                                 int64_t gate_stride, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] *= DevSigmoid(gate[(i / width) * gate_stride + i % width]);
  }
}

__global__ void GdnGatesKernel(float* alpha, float* beta, const float* __restrict__ ssm_a,
                               const float* __restrict__ dt_bias, int64_t n, int64_t Hv) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t h = i % Hv;
    alpha[i] = ssm_a[h] * DevSoftplus(alpha[i] + dt_bias[h]);
    beta[i] = DevSigmoid(beta[i]);
  }
}

__global__ void CopyColumnsKernel(const float* __restrict__ src, int64_t src_stride, int64_t offset,
                                  int64_t width, float* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / width, c = i % width;
    dst[i] = src[r * src_stride + offset + c];
  }
}

__global__ void StoreRowsKernel(float* __restrict__ dst, int64_t row, int64_t pos,
                                const int64_t* pos_dev, const float* __restrict__ src, int64_t n) {
  if (pos_dev != nullptr) pos += *pos_dev;
  float* d = dst + pos * row;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    d[i] = src[i];
  }
}

}  // namespace

Status LaunchStoreRows(float* dst, int64_t row, int64_t pos, const int64_t* pos_dev,
                       const float* src, int64_t T, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchStoreRows", {T, row}, &count));
  if (pos < 0) return CudaInvalidArgument("cuda::LaunchStoreRows: negative position");
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchStoreRows", {dst, src}));
  StoreRowsKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      dst, row, pos, pos_dev, src, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchL2NormScaleRows(const float* src, int64_t src_token_stride, int64_t T, int64_t heads,
                             int64_t n, float eps, float scale, float* dst, Stream stream) {
  int64_t rows = 0, count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchL2NormScaleRows", {T, heads}, &rows));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchL2NormScaleRows", {rows, n}, &count));
  if (src_token_stride < heads * n)
    return CudaInvalidArgument("cuda::LaunchL2NormScaleRows: token stride too small");
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchL2NormScaleRows", {src, dst}));
  L2NormScaleKernel<<<GridStrideBlocks(rows, kL2RowsPerBlock), kElementwiseThreads, 0,
                      AsCuda(stream)>>>(src, src_token_stride, heads, dst, rows, n, eps, scale);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchL2NormScale(float* x, int64_t rows, int64_t n, float eps, float scale, Stream stream) {
  return LaunchL2NormScaleRows(x, n, rows, 1, n, eps, scale, x, stream);
}

Status LaunchAdd(float* x, const float* y, int64_t n, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAdd", {n}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchAdd", {x, y}));
  AddKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(x, y, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchSwiGlu(const float* gate, float* up, int64_t n, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchSwiGlu", {n}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchSwiGlu", {gate, up}));
  SwiGluKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(gate, up,
                                                                                    count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchMulSigmoid(float* x, const float* gate, int64_t n, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMulSigmoid", {n}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMulSigmoid", {x, gate}));
  MulSigmoidKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      x, gate, count, count, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchMulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride,
                        Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchMulSigmoid (rows)", {rows, n}, &count));
  if (gate_stride < n) return CudaInvalidArgument("cuda::LaunchMulSigmoid: gate stride < n");
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchMulSigmoid (rows)", {x, gate}));
  MulSigmoidKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      x, gate, n, gate_stride, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchGdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias,
                      int64_t T, int64_t Hv, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchGdnGates", {T, Hv}, &count));
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchGdnGates", {alpha, beta, ssm_a, dt_bias}));
  GdnGatesKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      alpha, beta, ssm_a, dt_bias, count, Hv);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchCopyColumns(const float* src, int64_t rows, int64_t src_stride, int64_t offset,
                         int64_t width, float* dst, Stream stream) {
  int64_t count = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchCopyColumns", {rows, width}, &count));
  if (offset < 0 || src_stride < 0 || offset > src_stride || width > src_stride - offset) {
    return CudaInvalidArgument("cuda::LaunchCopyColumns: columns [" + std::to_string(offset) +
                               ", " + std::to_string(offset) + " + " + std::to_string(width) +
                               ") outside a row of " + std::to_string(src_stride));
  }
  if (count == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchCopyColumns", {src, dst}));
  CopyColumnsKernel<<<GridStrideBlocks(count), kElementwiseThreads, 0, AsCuda(stream)>>>(
      src, src_stride, offset, width, dst, count);
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
