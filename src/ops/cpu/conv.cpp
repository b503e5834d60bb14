// CPU causal depthwise conv + SiLU with conv-state carry (docs/spec/qwen35-architecture.md §7 step
// 4; math and layouts in conv.h). Work items are blocks of 256 channels over the ThreadPool; within
// a block the loop runs over tokens with the channels as SIMD lanes, so every load is contiguous:
// the Kc taps are transposed once into [Kc][block] and the old state into [Kc-1][block] (stack
// buffers), after which the inputs of token tau are either row tau of x or row Kc-1+tau of that
// state copy.
#include "ops/conv.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu/simd_f32.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace simd;

constexpr int64_t kBlock = 256;  // channels per work item
constexpr int64_t kMaxTaps = 8;  // larger kernels take the scalar path (Qwen3.5 has Kc = 4)

struct Args {
  CausalConvShape shape;
  const float* x;
  const float* w;
  float* state;
  float* y;
};

inline float SiluScalar(float u) { return u / (1.0f + std::exp(-u)); }

// Channels [c0, c1), any Kc: the reference loop.
void BlockScalar(const Args& a, int64_t c0, int64_t c1) {
  const int64_t T = a.shape.T, C = a.shape.C, Kc = a.shape.Kc, K1 = Kc - 1;
  for (int64_t c = c0; c < c1; ++c) {
    float* st = a.state + c * K1;
    const float* wc = a.w + c * Kc;
    auto input = [&](int64_t tau) { return tau >= 0 ? a.x[tau * C + c] : st[K1 + tau]; };
    for (int64_t t = 0; t < T; ++t) {
      float u = 0.0f;
      for (int64_t j = 0; j < Kc; ++j) u += wc[j] * input(t - K1 + j);
      a.y[t * C + c] = SiluScalar(u);
    }
    for (int64_t j = 0; j < K1; ++j) st[j] = input(T - K1 + j);  // ascending j: see ref/conv.cpp
  }
}

// Channels [c0, c1) with c1 - c0 <= kBlock and Kc <= kMaxTaps. kKc > 0 fixes Kc at compile time
// (the per-channel transposes then unroll; they dominate at T = 1); kKc == 0 reads it from shape.
template <int kKc>
void BlockSimd(const Args& a, int64_t c0, int64_t c1) {
  const int64_t T = a.shape.T, C = a.shape.C, Kc = kKc > 0 ? kKc : a.shape.Kc, K1 = Kc - 1;
  const int64_t nc = c1 - c0;
  float wt[kMaxTaps][kBlock];       // wt[j][c - c0] = w[c][j]
  float old[kMaxTaps - 1][kBlock];  // old[j][c - c0] = x_{j - K1}[c] (the state before the batch)
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t j = 0; j < Kc; ++j) wt[j][c] = a.w[(c0 + c) * Kc + j];
    for (int64_t j = 0; j < K1; ++j) old[j][c] = a.state[(c0 + c) * K1 + j];
  }
  // Channel c0 of the input of token tau (tau >= -K1).
  auto row = [&](int64_t tau) -> const float* {
    return tau >= 0 ? a.x + tau * C + c0 : old[K1 + tau];
  };
  for (int64_t t = 0; t < T; ++t) {
    const float* in[kMaxTaps];
    for (int64_t j = 0; j < Kc; ++j) in[j] = row(t - K1 + j);
    float* yt = a.y + t * C + c0;
    int64_t c = 0;
    for (; c + kLanes <= nc; c += kLanes) {
      VecF u = Mul(Load(wt[0] + c), Load(in[0] + c));
      for (int64_t j = 1; j < Kc; ++j) u = Fma(Load(wt[j] + c), Load(in[j] + c), u);
      Store(yt + c, Silu(u));
    }
    for (; c < nc; ++c) {
      float u = wt[0][c] * in[0][c];
      for (int64_t j = 1; j < Kc; ++j) u = std::fma(wt[j][c], in[j][c], u);
      yt[c] = SiluScalar(u);
    }
  }
  // New state: the last K1 raw inputs (from x, or from the old state copy when T < K1).
  const float* src[kMaxTaps];
  for (int64_t j = 0; j < K1; ++j) src[j] = row(T - K1 + j);
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t j = 0; j < K1; ++j) a.state[(c0 + c) * K1 + j] = src[j][c];
  }
}

}  // namespace

void CausalConvSilu(const CausalConvShape& shape, const float* x, const float* w, float* state,
                    float* y, ThreadPool& pool) {
  if (shape.T <= 0) return;
  const Args a{shape, x, w, state, y};
  const int64_t n_blocks = (shape.C + kBlock - 1) / kBlock;
  pool.ParallelFor(n_blocks, [&a](int64_t begin, int64_t end, int) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t c0 = b * kBlock, c1 = std::min(a.shape.C, c0 + kBlock);
      if (a.shape.Kc == 4) {
        BlockSimd<4>(a, c0, c1);
      } else if (a.shape.Kc <= kMaxTaps) {
        BlockSimd<0>(a, c0, c1);
      } else {
        BlockScalar(a, c0, c1);
      }
    }
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
