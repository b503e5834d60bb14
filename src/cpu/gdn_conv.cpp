// CPU GDN causal conv: channels are independent, so split them over the pool.
#include "cpu/ops.h"

namespace qwenrt::cpu {

void GdnConv(const float* x, const float* w, float* state, float* y, int64_t T, int64_t C, int64_t Kc,
             ThreadPool& pool) {
  if (T * C < 16384) return ref::GdnConv(x, w, state, y, T, C, Kc);
  pool.ParallelFor(C, [&](int64_t c0, int64_t c1, int) {
    const int64_t W = Kc - 1, n = c1 - c0;
    float* sc0 = state + c0 * W;
    const float* w0 = w + c0 * Kc;
    for (int64_t c = 0; c < n; ++c) {
      const float* wc = w0 + c * Kc;
      float* sc = sc0 + c * W;
      auto in = [&](int64_t tau) { return tau >= 0 ? x[tau * C + c0 + c] : sc[W + tau]; };
      for (int64_t t = 0; t < T; ++t) {
        float sum = 0.0f;
        for (int64_t j = 0; j < Kc; ++j) sum += wc[j] * in(t - W + j);
        y[t * C + c0 + c] = sum;
      }
      for (int64_t i = 0; i < W; ++i) sc[i] = in(T - W + i);
    }
  });
}

}  // namespace qwenrt::cpu
