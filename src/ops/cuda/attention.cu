// Causal grouped-query softmax attention over the KV cache (cuda_kernels.h), the same math as
// ref::Attention (ref/attention.cpp):
//
//   for token t (position n_past + t) and query head h, KV head g = h / (H / Hkv):
//     s_j   = (q[t][h] . k[j][g]) * (1 / sqrt(Dh))            j = 0 .. n_past + t (causal)
//     out[t][h] = sum_j softmax(s)_j * v[j][g]
//
// Shapes: q [T, H, Dh]; k, v [n_past + T, Hkv, Dh] (cache rows, already holding this batch's keys
// and values); out [T, H, Dh]. Dh <= 512.
//
// Split over the keys (flash-decoding), so one token still fills the GPU: the keys of token t are
// cut into nc = min(64, ceil(n_keys / 64)) chunks of L = ceil(n_keys / nc) consecutive positions.
//   pass 1, one block of 4 warps per (t, h, chunk c): scores s_j of the chunk into shared memory,
//           m_c = max s_j, p_j = e^(s_j - m_c), l_c = sum p_j, acc_c[d] = sum_j p_j v_j[d]
//           (sums in a fixed order), written to the scratch;
//   pass 2, one block per (t, h): M = max_c m_c, out[d] = (sum_c acc_c[d] e^(m_c-M)) /
//           (sum_c l_c e^(m_c-M)), c = 0, 1, ... in order.
// The chunking depends only on n_keys = n_past + t + 1, never on T, so out[t][h] depends only on
// q[t][h] and the cache rows 0..n_past+t: a prefill equals token-by-token decode bit for bit.
// Tokens are processed in groups sized to the caller's scratch (AttentionScratchFloats holds 64
// tokens).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common.cuh"
#include "launch_util.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

constexpr int kAttnWarps = 4;
constexpr int kAttnThreads = kAttnWarps * kWarpSize;
constexpr int64_t kAttnMaxDh = 512;
constexpr int kMaxChunks = 64;
constexpr int kMinChunkKeys = 64;
constexpr int64_t kGroupTokens = 64;  // tokens per group with AttentionScratchFloats of scratch
constexpr int64_t kMaxChunkLen = 48 * 1024 / sizeof(float);  // scores of a chunk in shared memory
static_assert(kMaxChunks * kMaxChunkLen == kAttentionMaxKeys, "cuda_kernels.h states the limit");

__host__ __device__ inline int64_t NumChunks(int64_t n_keys) {
  const int64_t nc = (n_keys + kMinChunkKeys - 1) / kMinChunkKeys;
  return nc < kMaxChunks ? nc : kMaxChunks;
}
__host__ __device__ inline int64_t ChunkLen(int64_t n_keys) {
  const int64_t nc = NumChunks(n_keys);
  return (n_keys + nc - 1) / nc;
}

// Fixed-order sum over the block (every thread gets the same bits). red: [kAttnWarps] shared.
__device__ float BlockSum(float v, float* red) {
  v = WarpSum(v);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  __syncthreads();  // red may still be read from a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kAttnWarps; ++w) total += red[w];
  return total;
}

__device__ float BlockMax(float v, float* red) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float m = red[0];
#pragma unroll
  for (int w = 1; w < kAttnWarps; ++w) m = fmaxf(m, red[w]);
  return m;
}

// Pass 1. grid = (kMaxChunks, items of the group); dynamic shared memory: ChunkLen floats.
// part_acc: [items, kMaxChunks, Dh]; part_ml: [items, kMaxChunks, 2] (m_c, l_c).
template <int NS>  // Dh slices per lane: dims lane + 32*s, s < NS
__global__ void __launch_bounds__(kAttnThreads)
    AttentionPartialKernel(const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, float* __restrict__ part_acc,
                           float* __restrict__ part_ml, int64_t t0, int64_t n_past,
                           const int64_t* n_past_dev, int64_t H, int64_t Hkv, int64_t Dh,
                           float scale) {
  extern __shared__ float scores[];
  if (n_past_dev != nullptr) n_past += *n_past_dev;
  __shared__ float red[kAttnWarps];
  const int64_t item = blockIdx.y, c = blockIdx.x;  // item = (t - t0) * H + h
  const int64_t t = t0 + item / H, h = item % H, g = h / (H / Hkv);
  const int64_t n_keys = n_past + t + 1;
  if (c >= NumChunks(n_keys)) return;  // block-uniform
  const int64_t L = ChunkLen(n_keys), j0 = c * L, n = (j0 + L < n_keys ? j0 + L : n_keys) - j0;
  const int64_t row = Hkv * Dh;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  // Scores: warp w takes keys w, w+4, ... of the chunk, two at a time for memory parallelism.
  const float* qh = q + (t * H + h) * Dh;
  float qr[NS];
#pragma unroll
  for (int s = 0; s < NS; ++s) {
    const int64_t d = lane + kWarpSize * s;
    qr[s] = d < Dh ? qh[d] : 0.0f;
  }
  for (int64_t i = warp; i < n; i += 2 * kAttnWarps) {
    const int64_t i2 = i + kAttnWarps;
    const float* ka = k + (j0 + i) * row + g * Dh;
    const float* kb = k + (j0 + (i2 < n ? i2 : i)) * row + g * Dh;
    float da = 0.0f, db = 0.0f;
#pragma unroll
    for (int s = 0; s < NS; ++s) {
      const int64_t d = lane + kWarpSize * s;
      if (d < Dh) {
        da += qr[s] * ka[d];
        db += qr[s] * kb[d];
      }
    }
    da = WarpSum(da);
    db = WarpSum(db);
    if (lane == 0) {
      scores[i] = da * scale;
      if (i2 < n) scores[i2] = db * scale;
    }
  }
  __syncthreads();

  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += kAttnThreads) m = fmaxf(m, scores[i]);
  m = BlockMax(m, red);
  float l = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kAttnThreads) {
    const float p = expf(scores[i] - m);
    scores[i] = p;
    l += p;
  }
  l = BlockSum(l, red);  // also orders the p writes before the reads below

  const int64_t slot = item * kMaxChunks + c;
  const float* vb = v + j0 * row + g * Dh;
  for (int64_t d = threadIdx.x; d < Dh; d += kAttnThreads) {
    float acc = 0.0f;
#pragma unroll 4
    for (int64_t i = 0; i < n; ++i) acc += scores[i] * vb[i * row + d];
    part_acc[slot * Dh + d] = acc;
  }
  if (threadIdx.x == 0) {
    part_ml[2 * slot] = m;
    part_ml[2 * slot + 1] = l;
  }
}

// Pass 2. grid = items of the group; merges the chunks of each (t, h) in order.
__global__ void __launch_bounds__(kAttnThreads)
    AttentionCombineKernel(const float* __restrict__ part_acc, const float* __restrict__ part_ml,
                           float* __restrict__ out, int64_t t0, int64_t n_past,
                           const int64_t* n_past_dev, int64_t H, int64_t Dh) {
  __shared__ float weight[kMaxChunks];
  if (n_past_dev != nullptr) n_past += *n_past_dev;
  __shared__ float inv_l;
  const int64_t item = blockIdx.x, t = t0 + item / H;
  const int64_t nc = NumChunks(n_past + t + 1);
  const float* ml = part_ml + 2 * item * kMaxChunks;
  if (threadIdx.x == 0) {
    float M = ml[0];
    for (int64_t c = 1; c < nc; ++c) M = fmaxf(M, ml[2 * c]);
    float L = 0.0f;
    for (int64_t c = 0; c < nc; ++c) {
      weight[c] = expf(ml[2 * c] - M);
      L += ml[2 * c + 1] * weight[c];
    }
    inv_l = 1.0f / L;
  }
  __syncthreads();
  const float* acc = part_acc + item * kMaxChunks * Dh;
  float* o = out + (t * H + item % H) * Dh;
  for (int64_t d = threadIdx.x; d < Dh; d += kAttnThreads) {
    float sum = 0.0f;
    for (int64_t c = 0; c < nc; ++c) sum += acc[c * Dh + d] * weight[c];
    o[d] = sum * inv_l;
  }
}

template <int NS>
void LaunchPartial(dim3 grid, size_t shared, cudaStream_t st, const float* q, const float* k,
                   const float* v, float* part_acc, float* part_ml, int64_t t0, int64_t n_past,
                   const int64_t* n_past_dev, int64_t H, int64_t Hkv, int64_t Dh, float scale) {
  if (shared > 48 * 1024) return;  // checked by the caller
  AttentionPartialKernel<NS><<<grid, kAttnThreads, shared, st>>>(
      q, k, v, part_acc, part_ml, t0, n_past, n_past_dev, H, Hkv, Dh, scale);
}

}  // namespace

int64_t AttentionScratchFloats(int64_t H, int64_t Dh) {
  return kGroupTokens * H * kMaxChunks * (Dh + 2);
}

Status LaunchAttention(const AttentionShape& shape, const float* q, const float* k, const float* v,
                       float* out, float* scratch, int64_t scratch_floats, Stream stream,
                       const int64_t* n_past_dev) {
  const AttentionShape& s = shape;
  if (s.T < 0 || s.n_past < 0 || s.H < 1 || s.Hkv < 1 || s.Dh < 1 || s.H % s.Hkv != 0) {
    return CudaInvalidArgument("cuda::LaunchAttention: bad shape T=" + std::to_string(s.T) +
                               " n_past=" + std::to_string(s.n_past) + " H=" + std::to_string(s.H) +
                               " Hkv=" + std::to_string(s.Hkv) + " Dh=" + std::to_string(s.Dh));
  }
  if (s.Dh > kAttnMaxDh) {
    return Status(StatusCode::kUnsupported, "cuda::LaunchAttention: head size " +
                                                std::to_string(s.Dh) + " > " +
                                                std::to_string(kAttnMaxDh));
  }
  int64_t items = 0, q_elems = 0, kv_elems = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAttention", {s.T, s.H}, &items));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAttention", {s.T, s.H, s.Dh}, &q_elems));
  QWENRT_RETURN_IF_ERROR(
      CountElements("LaunchAttention", {s.n_past + s.T, s.Hkv, s.Dh}, &kv_elems));
  if (items == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchAttention", {q, k, v, out, scratch}));
  const int64_t per_token = s.H * kMaxChunks * (s.Dh + 2);
  if (scratch_floats < per_token) {
    return CudaInvalidArgument("cuda::LaunchAttention: scratch of " +
                               std::to_string(scratch_floats) + " floats < " +
                               std::to_string(per_token) + " (AttentionScratchFloats)");
  }
  const int64_t max_len = ChunkLen(s.n_past + s.T);
  if (max_len > kMaxChunkLen) {
    return Status(StatusCode::kUnsupported,
                  "cuda::LaunchAttention: " + std::to_string(s.n_past + s.T) +
                      " keys exceed the kernel's limit");
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));  // as ref::Attention
  const cudaStream_t st = AsCuda(stream);
  const int64_t group = std::min<int64_t>(scratch_floats / per_token, 65535 / s.H);
  if (group < 1) return CudaInvalidArgument("cuda::LaunchAttention: too many heads for the grid");
  float* part_acc = scratch;
  float* part_ml = scratch + group * s.H * kMaxChunks * s.Dh;
  const int64_t slices = (s.Dh + kWarpSize - 1) / kWarpSize;
  for (int64_t t0 = 0; t0 < s.T; t0 += group) {
    const int64_t nt = std::min(group, s.T - t0);
    // ChunkLen <= 64 up to 4096 keys and grows with n_keys beyond: this bounds every token's chunk.
    // With the position on the device (a captured graph) the chunk length is unknown here: room for
    // the longest chunk the kernel supports.
    const size_t shared =
        n_past_dev != nullptr
            ? static_cast<size_t>(kMaxChunkLen) * sizeof(float)
            : static_cast<size_t>(std::max<int64_t>(kMinChunkKeys, ChunkLen(s.n_past + t0 + nt))) *
                  sizeof(float);
    const dim3 grid(kMaxChunks, static_cast<unsigned>(nt * s.H));
    // q, out: the group's rows are addressed from token t0 inside the kernels (t = t0 + local).
    auto partial = [&](auto ns) {
      LaunchPartial<decltype(ns)::value>(grid, shared, st, q, k, v, part_acc, part_ml, t0, s.n_past,
                                         n_past_dev, s.H, s.Hkv, s.Dh, scale);
    };
    if (slices <= 1)
      partial(std::integral_constant<int, 1>{});
    else if (slices <= 2)
      partial(std::integral_constant<int, 2>{});
    else if (slices <= 4)
      partial(std::integral_constant<int, 4>{});
    else if (slices <= 8)
      partial(std::integral_constant<int, 8>{});
    else
      partial(std::integral_constant<int, 16>{});
    AttentionCombineKernel<<<static_cast<unsigned>(nt * s.H), kAttnThreads, 0, st>>>(
        part_acc, part_ml, out, t0, s.n_past, n_past_dev, s.H, s.Dh);
  }
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
