// Mat-vec with GGUF weights dequantized on the fly (the exact f32 path; no activation quantization).
//
// Math:   y[t][r] = sum_c W[r][c] * x[t][c], W[r][c] decoded exactly as ref::DequantizeRow does
//         (spec gguf-and-quants.md §3): Q8_0 d*q; Q4_K/Q5_K (d*sc)*q - (dmin*m); Q6_K (d*sc)*q;
//         F16/BF16 widened. Products in f32, summed per lane then across the warp (the order differs
//         from ref::MatMul's column order, so results agree to rounding, not bit for bit).
// Shapes: W rows x cols (row r at w + r*row_bytes, cols % block size == 0); x [T, cols]; y [T, rows].
// Grid:   block = 128 threads = 4 warps, one warp per weight row and group of NT tokens (NT = 8, 4, 2
//         or 1: T is covered by launches of decreasing NT); grid = (ceil(rows / 4), tokens / NT)
//         (grid.y split into launches of at most 65535). Lane l owns fixed positions inside every
//         block (src/quant_lanes.h), so a warp reads each block's quant bytes with consecutive lanes
//         on consecutive bytes, decodes every weight once for its NT tokens, and the 32 lane sums of
//         each token meet in a shuffle reduction.
// Split invariance: the lane code pins its roundings (lanes::Fma/Mul/Sub) and the reduction tree is
//         fixed, so y[t][r] is the same bits for every NT and every T: a prefill equals the same
//         tokens decoded one by one.
// Versions: v2 (this): NT tokens per warp (weights read T/8 times instead of T times in prefill).
//         v1: one token per warp. Next: x staged in shared memory, 2 rows per warp, tensor cores
//         for large T (docs/performance.md).
#include "common.cuh"
#include "cuda_kernels.h"

#include <algorithm>
#include <limits>
#include <string>

#include "cuda_ops.h"
#include "quant_lanes.h"

namespace qwenrt::cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kMatVecThreads = kRowsPerBlock * kWarpSize;

template <int NT>
__global__ void __launch_bounds__(kMatVecThreads)
    DequantMatVecKernel(uint32_t type_id, const uint8_t* __restrict__ w, size_t row_bytes, int64_t cols,
                        int64_t rows, const float* __restrict__ x, float* __restrict__ y) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= rows) return;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  // type_id is uniform across the grid, so the switch inside costs one branch per call.
  lanes::LaneDotN<NT>(type_id, w + r * row_bytes, x + t0 * cols, cols, cols, lane, acc);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const float sum = WarpSum(acc[t]);
    if (lane == 0) y[(t0 + t) * rows + r] = sum;
  }
}

// Tokens [t_begin, t_begin + n) in groups of NT (n % NT == 0).
template <int NT>
void LaunchGroups(uint32_t type_id, const uint8_t* w, size_t row_bytes, int64_t cols, int64_t rows,
                  const float* x, float* y, int64_t t_begin, int64_t n, cudaStream_t stream) {
  const unsigned row_blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  constexpr int64_t kMaxGridY = 65535;
  for (int64_t g0 = 0; g0 < n / NT; g0 += kMaxGridY) {
    const int64_t ng = std::min(kMaxGridY, n / NT - g0);
    const int64_t t = t_begin + g0 * NT;
    dim3 grid(row_blocks, static_cast<unsigned>(ng));
    DequantMatVecKernel<NT><<<grid, kMatVecThreads, 0, stream>>>(type_id, w, row_bytes, cols, rows,
                                                                 x + t * cols, y + t * rows);
  }
}

bool HasLaneDecoder(gguf::Type type) {
  switch (type) {
    case gguf::Type::F32: case gguf::Type::F16: case gguf::Type::BF16: case gguf::Type::Q8_0:
    case gguf::Type::Q4_K: case gguf::Type::Q5_K: case gguf::Type::Q6_K:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status LaunchMatMul(gguf::Type type, const uint8_t* w, size_t row_bytes, int64_t cols, int64_t rows,
                    const float* x, float* y, int64_t T, Stream stream_handle) {
  if (T < 0 || rows < 0 || cols < 0) return CudaInvalidArgument("LaunchMatMul: negative size");
  if (T == 0 || rows == 0) return OkStatus();
  if ((rows + kRowsPerBlock - 1) / kRowsPerBlock > std::numeric_limits<int32_t>::max()) {
    return CudaInvalidArgument("LaunchMatMul: too many rows");
  }
  if (type == gguf::Type::F32 &&
      (row_bytes % sizeof(float) != 0 || reinterpret_cast<uintptr_t>(w) % sizeof(float) != 0)) {
    return CudaInvalidArgument("LaunchMatMul: F32 rows must be 4-byte aligned");
  }
  if (!HasLaneDecoder(type)) {
    return Status(StatusCode::kUnsupported,
                  std::string("cuda::MatMul: weight type ") + gguf::TypeName(type) + " is not supported");
  }
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  const auto id = static_cast<uint32_t>(type);
  int64_t t = 0;
  const int64_t n8 = T / 8 * 8;
  LaunchGroups<8>(id, w, row_bytes, cols, rows, x, y, t, n8, stream);
  t += n8;
  if (T - t >= 4) { LaunchGroups<4>(id, w, row_bytes, cols, rows, x, y, t, 4, stream); t += 4; }
  if (T - t >= 2) { LaunchGroups<2>(id, w, row_bytes, cols, rows, x, y, t, 2, stream); t += 2; }
  if (T - t >= 1) { LaunchGroups<1>(id, w, row_bytes, cols, rows, x, y, t, 1, stream); }
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status DequantMatVec(const WeightMatrix& w, const float* x, float* y, int64_t T, KernelTiming* timing) {
  if (T < 0) return CudaInvalidArgument("cuda::DequantMatVec: T = " + std::to_string(T));
  QWENRT_RETURN_IF_ERROR(CheckWeightMatrix(w));
  if (T == 0 || w.rows == 0) return OkStatus();
  if (x == nullptr || y == nullptr) return CudaInvalidArgument("cuda::DequantMatVec: null pointer");
  const int64_t kMaxElems = std::numeric_limits<int64_t>::max() / 8;
  if (T > kMaxElems / w.cols || T > kMaxElems / w.rows) {
    return CudaInvalidArgument("cuda::DequantMatVec: T * cols or T * rows overflows");
  }
  const int64_t packed = RowBytes(w.type, w.cols);
  const size_t wbytes = static_cast<size_t>(w.rows - 1) * w.row_bytes + static_cast<size_t>(packed);
  DeviceBuffer dw, dx, dy;
  QWENRT_RETURN_IF_ERROR(dw.Upload(w.data, wbytes));
  QWENRT_RETURN_IF_ERROR(dx.Upload(x, static_cast<size_t>(T * w.cols) * sizeof(float)));
  QWENRT_RETURN_IF_ERROR(dy.Allocate(static_cast<size_t>(T * w.rows) * sizeof(float)));
  auto launch = [&] {
    return LaunchMatMul(w.type, dw.as<uint8_t>(), w.row_bytes, w.cols, w.rows, dx.as<float>(),
                        dy.as<float>(), T, nullptr);
  };
  QWENRT_RETURN_IF_ERROR(launch());
  QWENRT_CUDA_TRY(cudaDeviceSynchronize());
  QWENRT_RETURN_IF_ERROR(dy.Download(y, static_cast<size_t>(T * w.rows) * sizeof(float)));
  if (timing != nullptr && timing->iters > 0) {
    QWENRT_RETURN_IF_ERROR(TimeLaunches(timing->iters, launch, &timing->ms));
  }
  return OkStatus();
}

}  // namespace qwenrt::cuda
