// CPU causal attention: (token, head) pairs in parallel, each with a two-pass softmax over its
// cached keys. Dot products and the V accumulation use 16 independent partial sums so the compiler
// vectorises them; this changes the summation order against ref (rounding only). Each query's
// result depends only on its own row and the cache, so results do not depend on the batch split.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/ops.h"

namespace qwenrt::cpu {
namespace {

constexpr int64_t kLanes = 16;

float Dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += a[d + l] * b[d + l];
  }
  float sum = 0.0f;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (int64_t l = 0; l < kLanes; ++l) sum += acc[l];
  return sum;
}

void Axpy(float alpha, const float* x, float* y, int64_t n) {  // y += alpha * x
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores, ThreadPool& pool) {
  const int64_t n_max = s.n_past + s.T, group = s.H / s.Hkv, row = s.Hkv * s.Dh;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
  // Long rows are expensive: hand out pairs one by one when the context is long.
  const int64_t grain = n_max > 256 ? 1 : 4;
  pool.ParallelForDynamic(s.T * s.H, grain, [&](int64_t b, int64_t e, int thread) {
    float* sc = scores + thread * n_max;
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / s.H, h = i % s.H, g = h / group;
      const int64_t n_keys = s.n_past + t + 1;
      const float* qh = q + (t * s.H + h) * s.Dh;
      float* oh = out + (t * s.H + h) * s.Dh;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n_keys; ++j) {
        sc[j] = Dot(qh, k + j * row + g * s.Dh, s.Dh) * scale;
        mx = std::max(mx, sc[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n_keys; ++j) {
        sc[j] = std::exp(sc[j] - mx);
        sum += sc[j];
      }
      const float inv = 1.0f / sum;
      std::fill(oh, oh + s.Dh, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) Axpy(sc[j] * inv, v + j * row + g * s.Dh, oh, s.Dh);
    }
  });
}

}  // namespace qwenrt::cpu
