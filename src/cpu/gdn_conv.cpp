// CPU GDN causal conv: channel ranges in parallel; within a range, token-major loops over contiguous
// channels so the compiler vectorises across channels. Same products summed in the same tap order
// as ref, so the results are bit-identical to ref::GdnConv.
#include <algorithm>

#include "cpu/ops.h"

namespace qwenrt::cpu {

void GdnConv(const float* x, const float* w, float* state, float* y, int64_t T, int64_t C, int64_t Kc,
             ThreadPool& pool) {
  const int64_t W = Kc - 1;
  if (T * C < 4096 || Kc > 16) return ref::GdnConv(x, w, state, y, T, C, Kc);
  const int64_t kBlock = 256;  // channels per task
  pool.ParallelForDynamic((C + kBlock - 1) / kBlock, 1, [&](int64_t b0, int64_t b1, int) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t c0 = blk * kBlock, n = std::min(kBlock, C - c0);
      float wt[16][kBlock];    // taps transposed: wt[j][c]
      float hist[16][kBlock];  // inputs at times -W .. -1 from the state: hist[W + tau][c]
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t j = 0; j < Kc; ++j) wt[j][c] = w[(c0 + c) * Kc + j];
        for (int64_t i = 0; i < W; ++i) hist[i][c] = state[(c0 + c) * W + i];
      }
      for (int64_t t = 0; t < T; ++t) {
        float* yt = y + t * C + c0;
        float acc[kBlock];
        std::fill(acc, acc + n, 0.0f);
        for (int64_t j = 0; j < Kc; ++j) {
          const int64_t tau = t - W + j;
          const float* in = tau >= 0 ? x + tau * C + c0 : hist[W + tau];
          for (int64_t c = 0; c < n; ++c) acc[c] += wt[j][c] * in[c];
        }
        std::copy(acc, acc + n, yt);
      }
      // New window: inputs T-W .. T-1, from x or (when T < W) from the old state.
      for (int64_t i = 0; i < W; ++i) {
        const int64_t tau = T - W + i;
        const float* in = tau >= 0 ? x + tau * C + c0 : hist[W + tau];
        for (int64_t c = 0; c < n; ++c) state[(c0 + c) * W + i] = in[c];
      }
    }
  });
}

}  // namespace qwenrt::cpu
