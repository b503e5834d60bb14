// Mat-vec with GGUF weights dequantized on the fly (the exact f32 path; no activation
// quantization).
//
// Math:   y[t][r] = sum_c W[r][c] * x[t][c], W[r][c] decoded exactly as ref::DequantizeRow does
//         (docs/spec/gguf-and-quants.md §3): Q8_0 d*q; Q4_K/Q5_K (d*sc)*q - (dmin*m); Q6_K
//         (d*sc)*q; F16/BF16 widened. Products in f32, summed per lane then across the warp (the
//         order differs from ref::MatMul's column order, so results agree to rounding, not bit for
//         bit).
// Shapes: W rows x cols (row r at w + r*row_bytes, cols % block size == 0); x [T, cols]; y [T,
// rows]. Grid:   block = 128 threads = 4 warps per weight row and group of NT tokens (NT = 8, 4, 2
// or 1: T
//         is covered by launches of decreasing NT); grid = (rows, tokens / NT) (grid.y split into
//         launches of at most 65535). Warp w takes the row's quant blocks w, w + 4, ...; lane l
//         owns fixed positions inside every block (src/ops/quant_lanes.h), so a warp reads each
//         block's quant bytes with consecutive lanes on consecutive bytes and decodes every weight
//         once for its NT tokens. The 32 lane sums of each token meet in a shuffle reduction, the 4
//         warp sums in shared memory in warp order. (v2 gave a whole row to one warp: latency-bound
//         on the short rows of the 0.8B shape, 100-400 GB/s on an H200.)
// Split invariance: the lane code pins its roundings (lanes::Fma/Mul/Sub) and the reduction tree is
//         fixed, so y[t][r] is the same bits for every NT and every T: a prefill equals the same
//         tokens decoded one by one.
// Versions: v3 (this): 4 warps per row, 4 rows x 8 tokens per block in prefill, 32-bit quant and
//         float4 activation loads. v2: NT tokens per warp. v1: one row and token per warp. Next
//         (docs/cuda.md): more loads in flight for decode, tensor cores for large T.
#include <algorithm>
#include <limits>
#include <string>

#include "common.cuh"
#include "ops/cuda_kernels.h"
#include "ops/cuda_ops.h"
#include "ops/quant_lanes.h"

namespace qwenrt::cuda {
namespace {

constexpr int kWarpsPerRow = 4;
constexpr int64_t kTallRows = 1 << 17;  // rows from which decode takes 4 rows per block
constexpr int kMatVecThreads = kWarpsPerRow * kWarpSize;

// Up to kMaxMatMulTargets matrices sharing x (LaunchMatMulMulti), passed by value. The grid's
// blocks walk the targets' row groups in order: block b belongs to matrix i with first[i] <= b <
// first[i + 1] (first counts groups of R rows).
struct Targets {
  uint32_t type[kMaxMatMulTargets];
  const uint8_t* w[kMaxMatMulTargets];
  size_t row_bytes[kMaxMatMulTargets];
  int64_t rows[kMaxMatMulTargets];
  float* y[kMaxMatMulTargets];
  int64_t first[kMaxMatMulTargets + 1];
};

// R rows and NT tokens per block of 4 warps.
template <int NT, int R>
__global__ void __launch_bounds__(kMatVecThreads)
    DequantMatVecKernel(Targets m, int64_t cols, const float* __restrict__ x) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  int i = 0;
  while (blockIdx.x >= m.first[i + 1]) ++i;  // block-uniform
  const int64_t r0 = (blockIdx.x - m.first[i]) * R, rows = m.rows[i];
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  const uint8_t* row_ptr[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    row_ptr[r] = m.w[i] + (r0 + r < rows ? r0 + r : rows - 1) * m.row_bytes[i];
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
  }
  // Warp w takes blocks w, w + 4, ... of the rows; the type is uniform across the block.
  lanes::LaneDotN<NT, R>(m.type[i], row_ptr, x + t0 * cols, cols, cols, lane, warp, kWarpsPerRow,
                         acc);
  __shared__ float part[kWarpsPerRow][R][NT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float sum = WarpSum(acc[r][t]);
      if (lane == 0) part[warp][r][t] = sum;
    }
  }
  __syncthreads();
  if (threadIdx.x < R * NT) {  // the warps' sums in a fixed order
    const int r = threadIdx.x / NT, t = threadIdx.x % NT;
    float sum = part[0][r][t];
#pragma unroll
    for (int k = 1; k < kWarpsPerRow; ++k) sum = __fadd_rn(sum, part[k][r][t]);
    if (r0 + r < rows) m.y[i][(t0 + t) * rows + r0 + r] = sum;
  }
}

// Tokens [t_begin, t_begin + n) in groups of NT (n % NT == 0), R rows per block.
template <int NT, int R>
void LaunchGroups(Targets m, int64_t cols, const float* x, int64_t t_begin, int64_t n,
                  int n_targets, cudaStream_t stream) {
  m.first[0] = 0;
  for (int i = 0; i < n_targets; ++i) m.first[i + 1] = m.first[i] + (m.rows[i] + R - 1) / R;
  constexpr int64_t kMaxGridY = 65535;
  for (int64_t g0 = 0; g0 < n / NT; g0 += kMaxGridY) {
    const int64_t ng = std::min(kMaxGridY, n / NT - g0);
    const int64_t t = t_begin + g0 * NT;
    Targets shifted = m;  // outputs from token t on
    for (int i = 0; i < n_targets; ++i) shifted.y[i] = m.y[i] + t * m.rows[i];
    dim3 grid(static_cast<unsigned>(m.first[n_targets]), static_cast<unsigned>(ng));
    DequantMatVecKernel<NT, R><<<grid, kMatVecThreads, 0, stream>>>(shifted, cols, x + t * cols);
  }
}

}  // namespace

bool HasMatMulKernel(gguf::Type type) {
  switch (type) {
    case gguf::Type::F32:
    case gguf::Type::F16:
    case gguf::Type::BF16:
    case gguf::Type::Q8_0:
    case gguf::Type::Q4_K:
    case gguf::Type::Q5_K:
    case gguf::Type::Q6_K:
      return true;
    default:
      return false;
  }
}

Status LaunchMatMulMulti(const MatMulTarget* targets, int n, int64_t cols, const float* x,
                         int64_t T, Stream stream_handle) {
  if (n < 1 || n > kMaxMatMulTargets || targets == nullptr) {
    return CudaInvalidArgument("LaunchMatMulMulti: 1 to " + std::to_string(kMaxMatMulTargets) +
                               " targets");
  }
  if (T < 0 || cols < 0) return CudaInvalidArgument("LaunchMatMul: negative size");
  Targets m{};
  m.first[0] = 0;
  for (int i = 0; i < n; ++i) {
    const MatMulTarget& t = targets[i];
    if (t.rows < 0) return CudaInvalidArgument("LaunchMatMul: negative size");
    // F32 rows are read as floats, Q4_K/Q5_K quants as 32-bit words (GGUF data is 32-byte aligned).
    const bool word_loads =
        t.type == gguf::Type::F32 || t.type == gguf::Type::Q4_K || t.type == gguf::Type::Q5_K;
    if (word_loads && (t.row_bytes % 4 != 0 || reinterpret_cast<uintptr_t>(t.w) % 4 != 0)) {
      return CudaInvalidArgument(std::string("LaunchMatMul: ") + gguf::TypeName(t.type) +
                                 " rows must be 4-byte aligned");
    }
    if (!HasMatMulKernel(t.type)) {
      return Status(StatusCode::kUnsupported, std::string("cuda::MatMul: weight type ") +
                                                  gguf::TypeName(t.type) + " is not supported");
    }
    m.type[i] = static_cast<uint32_t>(t.type);
    m.w[i] = t.w;
    m.row_bytes[i] = t.row_bytes;
    m.rows[i] = t.rows;
    m.y[i] = t.y;
    m.first[i + 1] = m.first[i] + t.rows;
  }
  if (m.first[n] > std::numeric_limits<int32_t>::max())
    return CudaInvalidArgument("LaunchMatMul: too many rows");
  // (first[] is recomputed per launch in row groups; here it only totals the rows.)
  // K-quant lanes read x as float4 (Q4_K/Q5_K) or float2 (Q6_K): rows of x must stay 16-byte
  // aligned.
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || (cols % 256 != 0 && cols % 4 != 0)) {
    for (int i = 0; i < n; ++i) {
      const gguf::Type ty = targets[i].type;
      if (ty == gguf::Type::Q4_K || ty == gguf::Type::Q5_K || ty == gguf::Type::Q6_K) {
        return CudaInvalidArgument("LaunchMatMul: x must be 16-byte aligned for K-quant weights");
      }
    }
  }
  if (T == 0 || m.first[n] == 0) return OkStatus();
  const cudaStream_t stream = AsCuda(stream_handle);
  int64_t t = 0;
  const int64_t n8 = T / 8 * 8;
  LaunchGroups<8, 4>(m, cols, x, t, n8, n, stream);  // prefill: 4 rows x 8 tokens per warp
  t += n8;
  if (T - t >= 4) {
    LaunchGroups<4, 1>(m, cols, x, t, 4, n, stream);
    t += 4;
  }
  if (T - t >= 2) {
    LaunchGroups<2, 1>(m, cols, x, t, 2, n, stream);
    t += 2;
  }
  if (T - t >= 1) {
    // Decode: one row per block, except for very tall matrices (the 248k-row LM head), where 4 rows
    // per block keep more bytes in flight per warp and need a quarter of the blocks. (Same bits
    // either way; 2 or 4 rows for every matrix measured no faster on an H200.)
    if (m.first[n] >= kTallRows) {
      LaunchGroups<1, 4>(m, cols, x, t, 1, n, stream);
    } else {
      LaunchGroups<1, 1>(m, cols, x, t, 1, n, stream);
    }
  }
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status LaunchMatMul(gguf::Type type, const uint8_t* w, size_t row_bytes, int64_t cols, int64_t rows,
                    const float* x, float* y, int64_t T, Stream stream) {
  const MatMulTarget target{type, w, row_bytes, rows, y};
  return LaunchMatMulMulti(&target, 1, cols, x, T, stream);
}

Status DequantMatVec(const WeightMatrix& w, const float* x, float* y, int64_t T,
                     KernelTiming* timing) {
  if (T < 0) return CudaInvalidArgument("cuda::DequantMatVec: T = " + std::to_string(T));
  QWENRT_RETURN_IF_ERROR(CheckWeightMatrix(w));
  if (!HasMatMulKernel(w.type)) {  // refused before touching the device
    return Status(StatusCode::kUnsupported, std::string("cuda::DequantMatVec: weight type ") +
                                                gguf::TypeName(w.type) + " is not supported");
  }
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
