// CPU causal attention: (token, head) pairs in parallel; each pair computed exactly as the
// reference does (two-pass softmax), with a per-thread score row.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/ops.h"

namespace qwenrt::cpu {

void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores, ThreadPool& pool) {
  const int64_t n_max = s.n_past + s.T;
  pool.ParallelForDynamic(s.T * s.H, 4, [&](int64_t b, int64_t e, int thread) {
    float* sc = scores + thread * n_max;
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / s.H, h = i % s.H;
      // One (token, head): a T=1 reference attention at position n_past + t restricted to head h.
      const AttentionShape one{1, s.n_past + t, 1, 1, s.Dh};
      const int64_t group = s.H / s.Hkv, g = h / group, row = s.Hkv * s.Dh;
      const float* qh = q + (t * s.H + h) * s.Dh;
      float* oh = out + (t * s.H + h) * s.Dh;
      const int64_t n_keys = one.n_past + 1;
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* kj = k + j * row + g * s.Dh;
        float dot = 0.0f;
        for (int64_t d = 0; d < s.Dh; ++d) dot += qh[d] * kj[d];
        sc[j] = dot * scale;
        mx = std::max(mx, sc[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n_keys; ++j) {
        sc[j] = std::exp(sc[j] - mx);
        sum += sc[j];
      }
      const float inv = 1.0f / sum;
      std::fill(oh, oh + s.Dh, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* vj = v + j * row + g * s.Dh;
        const float pj = sc[j] * inv;
        for (int64_t d = 0; d < s.Dh; ++d) oh[d] += pj * vj[d];
      }
    }
  });
}

}  // namespace qwenrt::cpu
