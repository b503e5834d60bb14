// Mat-vec with GGUF weights dequantized on the fly (the exact f32 path; no activation quantization).
//
// Math:   y[t][r] = sum_c W[r][c] * x[t][c], W[r][c] decoded exactly as ref::DequantizeRow does
//         (spec gguf-and-quants.md §3): Q8_0 d*q; Q4_K/Q5_K (d*sc)*q - (dmin*m); Q6_K (d*sc)*q;
//         F16/BF16 widened. Products in f32, summed per lane then across the warp (the order differs
//         from ref::MatMul's column order, so results agree to rounding, not bit for bit).
// Shapes: W rows x cols (row r at w + r*row_bytes, cols % block size == 0); x [T, cols]; y [T, rows].
// Grid:   block = 128 threads = 4 warps, one warp per weight row; grid = (ceil(rows / 4), T) (tokens
//         beyond 65535 in further launches). Lane l of the warp owns fixed positions inside every
//         block so a warp reads each block's quant bytes with consecutive lanes on consecutive bytes:
//           F32/F16/BF16: columns l, l+32, ...
//           Q8_0:  element l of each 32-element block
//           Q4_K/Q5_K: element 32s + l of sub-block s = 0..7 of each 256-element super-block
//                  (qs byte 32g + l holds s = 2g in its low and s = 2g+1 in its high nibble)
//           Q6_K:  elements 128n + 32m + l (n = 0,1; m = 0..3) of each super-block
// Versions: v1 (this): byte loads, one row per warp, x re-read from L1/L2 by every warp.
//         TODO(gguf): on an H200, compare against 2 rows per warp and x staged in shared memory for
//         T > 1 (scripts/gpu-check.sh prints us/launch and GB/s of weights).
#include "dequant_matvec.cuh"

#include <algorithm>
#include <limits>
#include <string>

#include "cuda_ops.h"

namespace qwenrt::cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kMatVecThreads = kRowsPerBlock * kWarpSize;

// Each Dot* returns this lane's partial sum of W[r][:] . x over the whole row.

__device__ float DotF32(const uint8_t* row, const float* x, int64_t cols, int lane) {
  const float* w = reinterpret_cast<const float*>(row);  // F32 rows are 4-byte aligned
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kWarpSize) acc += w[c] * x[c];
  return acc;
}

__device__ float DotF16(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kWarpSize) acc += Fp16Bits(LoadU16(row + 2 * c)) * x[c];
  return acc;
}

__device__ float DotBF16(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kWarpSize) acc += Bf16Bits(LoadU16(row + 2 * c)) * x[c];
  return acc;
}

// Q8_0 block: d (fp16) at 0, qs[32] (int8) at 2; 34 bytes.
__device__ float DotQ8_0(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * 34;
    const float d = Fp16Bits(LoadU16(blk));
    const float q = static_cast<float>(static_cast<int8_t>(blk[2 + lane]));
    acc += (d * q) * x[b * 32 + lane];
  }
  return acc;
}

// Scale and min of sub-block s from the 12 packed bytes (spec §3.5.1).
__device__ __forceinline__ void ScaleMinK(const uint8_t* b, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = b[s] & 63;
    *m = b[s + 4] & 63;
  } else {
    *sc = (b[s + 4] & 0x0F) | ((b[s - 4] >> 6) << 4);
    *m = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

// Q4_K (144 bytes: d, dmin, scales[12], qs[128]) and Q5_K (176 bytes: d, dmin, scales[12], qh[32],
// qs[128]).
template <bool kFiveBit>
__device__ float DotQ45K(const uint8_t* row, const float* x, int64_t cols, int lane) {
  constexpr int kBlockBytes = kFiveBit ? 176 : 144;
  constexpr int kQsOffset = kFiveBit ? 48 : 16;
  float acc = 0.0f;
  const int64_t nb = cols / 256;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * kBlockBytes;
    const float d = Fp16Bits(LoadU16(blk)), dmin = Fp16Bits(LoadU16(blk + 2));
    const uint8_t* scales = blk + 4;
    const uint8_t* qs = blk + kQsOffset;
    const int qh = kFiveBit ? blk[16 + lane] : 0;
    const float* xb = x + b * 256 + lane;
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      const int byte = qs[32 * g + lane];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * g + half;
        int sc, m;
        ScaleMinK(scales, s, &sc, &m);
        int q = half == 0 ? (byte & 0x0F) : (byte >> 4);
        if (kFiveBit) q += ((qh >> s) & 1) << 4;
        const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
        acc += (d1 * static_cast<float>(q) - m1) * xb[32 * s];
      }
    }
  }
  return acc;
}

// Q6_K (210 bytes: ql[128], qh[64], scales[16] int8, d fp16 at 208).
__device__ float DotQ6K(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  const int64_t nb = cols / 256;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * 210;
    const float d = Fp16Bits(LoadU16(blk + 208));
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    const float* xb = x + b * 256;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = blk + 64 * n;
      const int lo0 = ql[lane], lo1 = ql[lane + 32];
      const int hi = blk[128 + 32 * n + lane];
      const int q[4] = {(lo0 & 0x0F) | (((hi >> 0) & 3) << 4), (lo1 & 0x0F) | (((hi >> 2) & 3) << 4),
                        (lo0 >> 4) | (((hi >> 4) & 3) << 4), (lo1 >> 4) | (((hi >> 6) & 3) << 4)};
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int e = 128 * n + 32 * m + lane;
        acc += (d * static_cast<float>(scales[e / 16]) * static_cast<float>(q[m] - 32)) * xb[e];
      }
    }
  }
  return acc;
}

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
    acc = DotF32(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::F16) {
    acc = DotF16(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::BF16) {
    acc = DotBF16(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q8_0) {
    acc = DotQ8_0(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q4_K) {
    acc = DotQ45K<false>(row, xt, cols, lane);
  } else if constexpr (kType == gguf::Type::Q5_K) {
    acc = DotQ45K<true>(row, xt, cols, lane);
  } else {
    static_assert(kType == gguf::Type::Q6_K, "unhandled weight type");
    acc = DotQ6K(row, xt, cols, lane);
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
