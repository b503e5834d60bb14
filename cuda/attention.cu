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
// Grid: one block of 8 warps per (t, h) item (grid-stride over the T*H items, block-uniform).
// Warp w takes keys j = w, w+8, w+16, ... and keeps an online softmax: running max m, running sum
// l and its share of the output accumulator, lane l owning dims l, l+32, ... (NS = Dh/32 rounded up
// to a power of two slices in registers, q in registers too). Per key: lane partial dot products,
// a butterfly warp sum (every lane gets the same bits), then
//   m' = max(m, s);  l = l e^(m-m') + e^(s-m');  acc = acc e^(m-m') + e^(s-m') v_j.
// The 8 warp states then meet in shared memory and are merged in the fixed order w = 0..7:
//   M = max_w m_w;  L = sum_w l_w e^(m_w-M);  out[d] = (sum_w acc_w[d] e^(m_w-M)) / L.
// Which warp handles key j depends only on j, and the merge order is fixed, so out[t][h] depends
// only on q[t][h] and the cache rows 0..n_past+t: a prefill equals token-by-token decode bit for bit.
// No scratch memory beyond 16 KiB of static shared memory per block.
#include <cmath>

#include "common.cuh"
#include "cuda_kernels.h"
#include "launch_util.cuh"

namespace qwenrt::cuda {
namespace {

cudaStream_t AsCuda(Stream stream) { return static_cast<cudaStream_t>(stream); }

constexpr int kAttnWarps = 8;
constexpr int kAttnThreads = kAttnWarps * kWarpSize;
constexpr int64_t kAttnMaxDh = 512;

template <int NS>  // slices of Dh per lane: dims lane + 32*s, s < NS
__global__ void __launch_bounds__(kAttnThreads)
    AttentionKernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                    float* __restrict__ out, int64_t T, int64_t n_past, int64_t H, int64_t Hkv, int64_t Dh,
                    float scale) {
  __shared__ float s_acc[kAttnWarps][kAttnMaxDh];
  __shared__ float s_m[kAttnWarps], s_l[kAttnWarps];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t group = H / Hkv, row = Hkv * Dh, items = T * H;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {  // item = t * H + h
    const int64_t t = item / H, h = item % H, g = h / group;
    const int64_t n_keys = n_past + t + 1;
    const float* qh = q + item * Dh;
    float qr[NS], acc[NS];
#pragma unroll
    for (int s = 0; s < NS; ++s) {
      const int64_t d = lane + kWarpSize * s;
      qr[s] = d < Dh ? qh[d] : 0.0f;
      acc[s] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = warp; j < n_keys; j += kAttnWarps) {  // warp-uniform loop
      const float* kj = k + j * row + g * Dh;
      const float* vj = v + j * row + g * Dh;
      float dot = 0.0f;
#pragma unroll
      for (int s = 0; s < NS; ++s) {
        const int64_t d = lane + kWarpSize * s;
        if (d < Dh) dot += qr[s] * kj[d];
      }
      const float score = WarpSum(dot) * scale;
      const float m_new = fmaxf(m, score);
      const float corr = expf(m - m_new);  // 0 for the first key (m = -inf)
      const float p = expf(score - m_new);
      l = l * corr + p;
#pragma unroll
      for (int s = 0; s < NS; ++s) {
        const int64_t d = lane + kWarpSize * s;
        if (d < Dh) acc[s] = acc[s] * corr + p * vj[d];
      }
      m = m_new;
    }
#pragma unroll
    for (int s = 0; s < NS; ++s) {
      const int64_t d = lane + kWarpSize * s;
      if (d < Dh) s_acc[warp][d] = acc[s];
    }
    if (lane == 0) {
      s_m[warp] = m;  // -inf and l = 0 for a warp without keys: weight e^(-inf) = 0 below
      s_l[warp] = l;
    }
    __syncthreads();
    float M = s_m[0];  // finite: warp 0 always has key 0
#pragma unroll
    for (int w = 1; w < kAttnWarps; ++w) M = fmaxf(M, s_m[w]);
    float f[kAttnWarps], L = 0.0f;
#pragma unroll
    for (int w = 0; w < kAttnWarps; ++w) {
      f[w] = expf(s_m[w] - M);
      L += s_l[w] * f[w];
    }
    float* oh = out + item * Dh;
    for (int64_t d = threadIdx.x; d < Dh; d += kAttnThreads) {
      float o = 0.0f;
#pragma unroll
      for (int w = 0; w < kAttnWarps; ++w) o += s_acc[w][d] * f[w];
      oh[d] = o / L;
    }
    __syncthreads();  // shared memory is reused by the next item
  }
}

}  // namespace

Status LaunchAttention(const AttentionShape& shape, const float* q, const float* k, const float* v,
                       float* out, Stream stream) {
  const AttentionShape& s = shape;
  if (s.T < 0 || s.n_past < 0 || s.H < 1 || s.Hkv < 1 || s.Dh < 1 || s.H % s.Hkv != 0) {
    return CudaInvalidArgument("cuda::LaunchAttention: bad shape T=" + std::to_string(s.T) +
                               " n_past=" + std::to_string(s.n_past) + " H=" + std::to_string(s.H) +
                               " Hkv=" + std::to_string(s.Hkv) + " Dh=" + std::to_string(s.Dh));
  }
  if (s.Dh > kAttnMaxDh) {
    return Status(StatusCode::kUnsupported, "cuda::LaunchAttention: head size " + std::to_string(s.Dh) +
                                                " > " + std::to_string(kAttnMaxDh));
  }
  int64_t items = 0, q_elems = 0, kv_elems = 0;
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAttention", {s.T, s.H}, &items));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAttention", {s.T, s.H, s.Dh}, &q_elems));
  QWENRT_RETURN_IF_ERROR(CountElements("LaunchAttention", {s.n_past + s.T, s.Hkv, s.Dh}, &kv_elems));
  if (items == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(CheckPointers("LaunchAttention", {q, k, v, out}));
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));  // as ref::Attention
  const unsigned blocks = GridStrideBlocks(items, 1);
  const cudaStream_t st = AsCuda(stream);
  const int64_t slices = (s.Dh + kWarpSize - 1) / kWarpSize;
  if (slices <= 1) {
    AttentionKernel<1><<<blocks, kAttnThreads, 0, st>>>(q, k, v, out, s.T, s.n_past, s.H, s.Hkv, s.Dh, scale);
  } else if (slices <= 2) {
    AttentionKernel<2><<<blocks, kAttnThreads, 0, st>>>(q, k, v, out, s.T, s.n_past, s.H, s.Hkv, s.Dh, scale);
  } else if (slices <= 4) {
    AttentionKernel<4><<<blocks, kAttnThreads, 0, st>>>(q, k, v, out, s.T, s.n_past, s.H, s.Hkv, s.Dh, scale);
  } else if (slices <= 8) {
    AttentionKernel<8><<<blocks, kAttnThreads, 0, st>>>(q, k, v, out, s.T, s.n_past, s.H, s.Hkv, s.Dh, scale);
  } else {
    AttentionKernel<16><<<blocks, kAttnThreads, 0, st>>>(q, k, v, out, s.T, s.n_past, s.H, s.Hkv, s.Dh, scale);
  }
  QWENRT_CUDA_TRY(cudaGetLastError());
  return OkStatus();
}

}  // namespace qwenrt::cuda
