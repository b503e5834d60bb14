// The gated delta rule, token-serial (decode form), on the GPU.
//
// Math (per value head h, key head hk = h % Hk, token t; S_h is Dk x Dv, column j = value dim j):
//   S   <- exp(g_t) * S
//   r_j =  beta_t * (v_t[j] - sum_i S[i][j] k_t[i])
//   S[:, j] += k_t * r_j
//   o_t[j] = sum_i S[i][j] q_t[i]                       (read after the update)
// i.e. exactly ref::GatedDelta, including the order of the per-column operations.
// Shapes: q, k [T, Hk, Dk]; v [T, Hv, Dv]; g, beta [T, Hv]; state [Hv, Dv, Dk] (S[i][j] at
//         h*Dv*Dk + j*Dk + i: a column is contiguous); out [T, Hv, Dv].
// Grid:   block = 128 threads = 4 warps; grid = (ceil(Dv / 4), Hv). Warp w of block (bx, h) owns
//         column j = 4*bx + w of S_h for the whole sequence: lane l keeps S[i][j] for
//         i = l, l+32, ... (kPerLane = ceil(Dk/32) <= 8 registers), loaded once before token 0 and
//         stored once after token T-1. Per token the warp needs two warp reductions (S^T k and
//         S^T q); k_t, q_t are read by all warps of the head and served from L1/L2.
//         Columns are independent, so there is no inter-warp synchronisation at all. The per-column
//         code is lanes::GatedDeltaColumn (src/ops/gated_delta_lanes.h), which tests also run on
//         the CPU with an emulated warp.
// Measured (H200, cuda_ops_bench, 16 heads of 128 x 128): 3.5 us for one token, 43 us for 64.
//         A chunked prefill form (as cpu/gated_delta_chunk.cpp) would be faster for large T but not
//         split-invariant; at the 0.8B shape the delta rule is a small part of a prefill.
#include <limits>
#include <string>

#include "common.cuh"
#include "ops/cuda_kernels.h"
#include "ops/cuda_ops.h"
#include "ops/gated_delta_lanes.h"

namespace qwenrt::cuda {
namespace {

constexpr int kColsPerBlock = 4;
constexpr int kGdnThreads = kColsPerBlock * kWarpSize;

// This thread is one lane of the warp; the lane sums are shuffle reductions.
struct DeviceWarp {
  static constexpr int kHere = 1;
  int lane;
  // __host__ __device__ only because GatedDeltaColumn is; only ever called on the device.
  QWENRT_HD int Lane(int) const { return lane; }
  QWENRT_HD float Sum(const float* part) const {
#ifdef __CUDA_ARCH__
    return WarpSum(part[0]);
#else
    return part[0];
#endif
  }
};

template <int kPerLane>
__global__ void __launch_bounds__(kGdnThreads)
    GatedDeltaRecurrentKernel(GatedDeltaShape sh, const float* __restrict__ q,
                              const float* __restrict__ k, const float* __restrict__ v,
                              const float* __restrict__ g, const float* __restrict__ beta,
                              float* __restrict__ state, float* __restrict__ out) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kColsPerBlock + warp;
  if (j >= sh.Dv) return;  // whole warps exit together: the shuffles below stay full-warp
  lanes::GatedDeltaColumn<kPerLane>(DeviceWarp{lane}, sh, blockIdx.y, j, q, k, v, g, beta, state,
                                    out);
}

template <int kPerLane>
void Launch(const GatedDeltaShape& sh, const float* q, const float* k, const float* v,
            const float* g, const float* beta, float* state, float* out, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((sh.Dv + kColsPerBlock - 1) / kColsPerBlock),
            static_cast<unsigned>(sh.Hv));
  GatedDeltaRecurrentKernel<kPerLane>
      <<<grid, kGdnThreads, 0, stream>>>(sh, q, k, v, g, beta, state, out);
}

Status CheckShape(const GatedDeltaShape& s) {
  if (s.T < 0 || s.Hk < 1 || s.Hv < 1 || s.Dk < 1 || s.Dv < 1) {
    return CudaInvalidArgument("cuda::GatedDeltaRecurrent: bad shape T=" + std::to_string(s.T) +
                               " Hk=" + std::to_string(s.Hk) + " Hv=" + std::to_string(s.Hv) +
                               " Dk=" + std::to_string(s.Dk) + " Dv=" + std::to_string(s.Dv));
  }
  if (s.Dk > kGatedDeltaMaxDk) {
    return Status(StatusCode::kUnsupported,
                  "cuda::GatedDeltaRecurrent: Dk = " + std::to_string(s.Dk) + " > " +
                      std::to_string(kGatedDeltaMaxDk));
  }
  if (s.Hv > 65535 || s.Dv > std::numeric_limits<int32_t>::max()) {
    return CudaInvalidArgument("cuda::GatedDeltaRecurrent: Hv or Dv too large for the grid");
  }
  // Largest buffer: T * max(Hk*Dk, Hv*Dv) floats; keep every product far from overflow.
  const int64_t lim = std::numeric_limits<int64_t>::max() / 16;
  if (s.Hk > lim / s.Dk || s.Hv > lim / s.Dv || s.Hv > lim / (s.Dv * s.Dk)) {
    return CudaInvalidArgument("cuda::GatedDeltaRecurrent: shape overflows");
  }
  const int64_t per_t = std::max(s.Hk * s.Dk, s.Hv * s.Dv);
  if (s.T > 0 && s.T > lim / per_t)
    return CudaInvalidArgument("cuda::GatedDeltaRecurrent: T too large");
  return OkStatus();
}

}  // namespace

Status LaunchGatedDelta(const GatedDeltaShape& shape, const float* q, const float* k,
                        const float* v, const float* g, const float* beta, float* state, float* out,
                        Stream stream_handle) {
  const cudaStream_t stream = AsCuda(stream_handle);
  QWENRT_RETURN_IF_ERROR(CheckShape(shape));
  if (shape.T == 0) return OkStatus();
  switch ((shape.Dk + kWarpSize - 1) / kWarpSize) {
    case 1:
      Launch<1>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 2:
      Launch<2>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 3:
      Launch<3>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 4:
      Launch<4>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 5:
      Launch<5>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 6:
      Launch<6>(shape, q, k, v, g, beta, state, out, stream);
      break;
    case 7:
      Launch<7>(shape, q, k, v, g, beta, state, out, stream);
      break;
    default:
      Launch<8>(shape, q, k, v, g, beta, state, out, stream);
      break;  // Dk <= 256 checked
  }
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

Status GatedDeltaRecurrent(const GatedDeltaShape& shape, const float* q, const float* k,
                           const float* v, const float* g, const float* beta, float* state,
                           float* out, KernelTiming* timing) {
  QWENRT_RETURN_IF_ERROR(CheckShape(shape));
  const size_t qk = static_cast<size_t>(shape.T * shape.Hk * shape.Dk) * sizeof(float);
  const size_t vo = static_cast<size_t>(shape.T * shape.Hv * shape.Dv) * sizeof(float);
  const size_t gb = static_cast<size_t>(shape.T * shape.Hv) * sizeof(float);
  const size_t st = static_cast<size_t>(shape.Hv * shape.Dv * shape.Dk) * sizeof(float);
  if (state == nullptr || (shape.T > 0 && (q == nullptr || k == nullptr || v == nullptr ||
                                           g == nullptr || beta == nullptr || out == nullptr))) {
    return CudaInvalidArgument("cuda::GatedDeltaRecurrent: null pointer");
  }
  if (shape.T == 0) return OkStatus();
  DeviceBuffer dq, dk, dv, dg, db, ds, dout;
  QWENRT_RETURN_IF_ERROR(dq.Upload(q, qk));
  QWENRT_RETURN_IF_ERROR(dk.Upload(k, qk));
  QWENRT_RETURN_IF_ERROR(dv.Upload(v, vo));
  QWENRT_RETURN_IF_ERROR(dg.Upload(g, gb));
  QWENRT_RETURN_IF_ERROR(db.Upload(beta, gb));
  QWENRT_RETURN_IF_ERROR(ds.Upload(state, st));
  QWENRT_RETURN_IF_ERROR(dout.Allocate(vo));
  auto launch = [&] {
    return LaunchGatedDelta(shape, dq.as<float>(), dk.as<float>(), dv.as<float>(), dg.as<float>(),
                            db.as<float>(), ds.as<float>(), dout.as<float>(), nullptr);
  };
  QWENRT_RETURN_IF_ERROR(launch());
  QWENRT_CUDA_TRY(cudaDeviceSynchronize());
  QWENRT_RETURN_IF_ERROR(dout.Download(out, vo));
  QWENRT_RETURN_IF_ERROR(ds.Download(state, st));
  // Timing runs keep evolving the device copy of the state; the host results are already final.
  if (timing != nullptr && timing->iters > 0) {
    QWENRT_RETURN_IF_ERROR(TimeLaunches(timing->iters, launch, &timing->ms));
  }
  return OkStatus();
}

}  // namespace qwenrt::cuda
