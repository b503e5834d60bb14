// Reference causal depthwise conv + SiLU with conv-state carry (docs/spec/qwen35-architecture.md §7
// step 4): plain scalar loops, one channel at a time, std::exp. No SIMD, no threads: the oracle for
// cpu::CausalConvSilu.
#include "ops/conv.h"

#include <cmath>

namespace qwenrt::ref {

void CausalConvSilu(const CausalConvShape& shape, const float* x, const float* w, float* state,
                    float* y) {
  const int64_t T = shape.T, C = shape.C, Kc = shape.Kc, K1 = shape.Kc - 1;
  if (T <= 0) return;
  for (int64_t c = 0; c < C; ++c) {
    float* st = state + c * K1;  // [K1]: x_{-K1} .. x_{-1} of this channel
    const float* wc = w + c * Kc;
    // Input at token tau (tau >= -K1): from x, or from the state before the batch.
    auto input = [&](int64_t tau) { return tau >= 0 ? x[tau * C + c] : st[K1 + tau]; };
    for (int64_t t = 0; t < T; ++t) {
      float u = 0.0f;
      for (int64_t j = 0; j < Kc; ++j) u += wc[j] * input(t - K1 + j);
      y[t * C + c] = u / (1.0f + std::exp(-u));
    }
    // New state: x_{T-K1} .. x_{T-1}. Entry j reads old entry j + T (> j) when it comes from the
    // old state, so updating in ascending j never reads an entry already overwritten.
    for (int64_t j = 0; j < K1; ++j) st[j] = input(T - K1 + j);
  }
}

}  // namespace qwenrt::ref
