// Mat-vec with GGUF weights dequantized on the fly (the exact f32 path; no activation quantization).
//
// Math:   y[t][r] = sum_c W[r][c] * x[t][c], W[r][c] decoded exactly as ref::DequantizeRow does
//         (spec gguf-and-quants.md §3): Q8_0 d*q; Q4_K/Q5_K (d*sc)*q - (dmin*m); Q6_K (d*sc)*q;
//         F16/BF16 widened. Products in f32, summed per lane then across the warp (the order differs
//         from ref::MatMul's column order, so results agree to rounding, not bit for bit).
// Shapes: W rows x cols (row r at w + r*row_bytes, cols % block size == 0); x [T, cols]; y [T, rows].
// Grid:   block = 128 threads = 4 warps, one warp per weight row; grid = (ceil(rows / 4), T) (tokens
//         beyond 65535 in further launches). Lane l of the warp owns fixed positions inside every
//         block (src/quant_lanes.h) so a warp reads each block's quant bytes with consecutive lanes
//         on consecutive bytes; the 32 lane sums meet in a shuffle reduction.
// Versions: v1 (this): byte loads, one row per warp, x re-read from L1/L2 by every warp.
//         TODO(gguf): on an H200, compare against 2 rows per warp and x staged in shared memory for
//         T > 1 (scripts/gpu-check.sh prints us/launch and GB/s of weights).
#include "dequant_matvec.cuh"

#include <algorithm>
#include <limits>
#include <string>

#include "cuda_ops.h"
#include "quant_lanes.h"

namespace qwenrt::cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kMatVecThreads = kRowsPerBlock * kWarpSize;

// The per-lane dot products (lanes::Dot*) live in quant_lanes.h, shared with the CPU emulation
// test of the lane mapping.

template <gguf::Type kType>
__global__ void __launch_bounds__(kMatVecThreads)
    DequantMatVecKernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t cols, int64_t rows,
                        const float* __restrict__ x, float* __restrict__ y) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= rows) return;
  const int64_t t = blockIdx.y;
  const uint8_t* row = w + r * row_bytes;
  const float* xt = x + t * cols;
  float acc;
  if constexpr (kType == gguf::Type::F32) {
    acc = lanes::DotF32(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::F16) {
    acc = lanes::DotF16(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::BF16) {
    acc = lanes::DotBF16(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q8_0) {
    acc = lanes::DotQ8_0(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q4_K) {
    acc = lanes::DotQ45K<false>(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q5_K) {
    acc = lanes::DotQ45K<true>(row, xt, cols, lane);
  } else {
    static_assert(kType == gguf::Type::Q6_K, "unhandled weight type");
    acc = lanes::DotQ6K(row, xt, cols, lane);
  }
  acc = WarpSum(acc);
  if (lane == 0) y[t * rows + r] = acc;
}

template <gguf::Type kType>
void Launch(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t rows, const float* x, float* y,
            int64_t T, cudaStream_t stream) {
  const unsigned row_blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  constexpr int64_t kMaxGridY = 65535;
  for (int64_t t0 = 0; t0 < T; t0 += kMaxGridY) {
    const int64_t nt = std::min(kMaxGridY, T - t0);
    dim3 grid(row_blocks, static_cast<unsigned>(nt));
    DequantMatVecKernel<kType><<<grid, kMatVecThreads, 0, stream>>>(w, row_bytes, cols, rows,
                                                                     x + t0 * cols, y + t0 * rows);
  }
}

}  // namespace

Status LaunchDequantMatVec(gguf::Type type, const uint8_t* w, size_t row_bytes, int64_t cols,
                           int64_t rows, const float* x, float* y, int64_t T, cudaStream_t stream) {
  if (T == 0 || rows == 0) return OkStatus();
  if ((rows + kRowsPerBlock - 1) / kRowsPerBlock > std::numeric_limits<int32_t>::max()) {
    return CudaInvalidArgument("DequantMatVec: too many rows");
  }
  if (type == gguf::Type::F32 &&
      (row_bytes % sizeof(float) != 0 || reinterpret_cast<uintptr_t>(w) % sizeof(float) != 0)) {
    return CudaInvalidArgument("DequantMatVec: F32 rows must be 4-byte aligned");
  }
  switch (type) {
    case gguf::Type::F32: Launch<gguf::Type::F32>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::F16: Launch<gguf::Type::F16>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::BF16: Launch<gguf::Type::BF16>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::Q8_0: Launch<gguf::Type::Q8_0>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::Q4_K: Launch<gguf::Type::Q4_K>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::Q5_K: Launch<gguf::Type::Q5_K>(w, row_bytes, cols, rows, x, y, T, stream); break;
    case gguf::Type::Q6_K: Launch<gguf::Type::Q6_K>(w, row_bytes, cols, rows, x, y, T, stream); break;
    default:
      return Status(StatusCode::kUnsupported,
                    std::string("cuda::DequantMatVec: weight type ") + gguf::TypeName(type) +
                        " is not supported");
  }
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
    return LaunchDequantMatVec(w.type, dw.as<uint8_t>(), w.row_bytes, w.cols, w.rows, dx.as<float>(),
                               dy.as<float>(), T, 0);
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
