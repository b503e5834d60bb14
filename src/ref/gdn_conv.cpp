// Reference causal depthwise convolution of the gated delta net, with its rolling input window.
#include "ref/ops.h"

namespace qwenrt::ref {

void GdnConv(const float* x, const float* w, float* state, float* y, int64_t T, int64_t C, int64_t Kc) {
  const int64_t W = Kc - 1;  // past inputs kept per channel
  for (int64_t c = 0; c < C; ++c) {
    const float* wc = w + c * Kc;
    float* sc = state + c * W;
    // Input at time tau (tau < 0: from the state, which holds tau = -W .. -1 oldest first).
    auto in = [&](int64_t tau) { return tau >= 0 ? x[tau * C + c] : sc[W + tau]; };
    for (int64_t t = 0; t < T; ++t) {
      float sum = 0.0f;
      for (int64_t j = 0; j < Kc; ++j) sum += wc[j] * in(t - W + j);
      y[t * C + c] = sum;
    }
    // New window: inputs T-W .. T-1. Ascending writes only read indices not yet overwritten.
    for (int64_t i = 0; i < W; ++i) sc[i] = in(T - W + i);
  }
}

}  // namespace qwenrt::ref
