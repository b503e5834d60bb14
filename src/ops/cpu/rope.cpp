// CPU rotary embedding (rope.h): tokens in parallel. The angles depend only on the position, not
// on the head, so each token computes its R/2 (cos, sin) pairs once, with exactly ref::Rope's
// operations, and rotates all its heads with them: bit-identical to ref at 1/heads of the trig
// calls. Tokens are independent, so any split gives the same bits.
#include "ops/rope.h"

#include <cmath>

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

constexpr int64_t kMaxPairs = 256;  // R/2 up to here uses the stack tables (Qwen3.5: 32); else ref

// Tokens [t0, t1) of x [T, heads, Dh].
void RopeTokens(float* x, int64_t t0, int64_t t1, int64_t heads, int64_t Dh, int64_t pos0,
                const RopeParams& p) {
  const int64_t half = p.n_dims / 2;
  const float theta_scale = std::pow(p.base, -2.0f / static_cast<float>(p.n_dims));
  float cos_i[kMaxPairs], sin_i[kMaxPairs];
  for (int64_t t = t0; t < t1; ++t) {
    float theta = static_cast<float>(pos0 + t);  // theta_i = pos * theta_scale^i, iteratively
    for (int64_t i = 0; i < half; ++i) {
      const bool rotate = p.pair_uses_pos == nullptr || (*p.pair_uses_pos)[i];
      RopePairCosSin(p, i, theta, rotate, &cos_i[i], &sin_i[i]);
      theta *= theta_scale;
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* xh = x + (t * heads + h) * Dh;
      for (int64_t i = 0; i < half; ++i) {
        const float c = cos_i[i], s = sin_i[i];
        const float x0 = xh[i], x1 = xh[i + half];
        xh[i] = x0 * c - x1 * s;
        xh[i + half] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace

void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p,
          ThreadPool& pool) {
  if (p.n_dims / 2 > kMaxPairs) return ref::Rope(x, T, heads, Dh, pos0, p);
  // Per token: R/2 (sin, cos) pairs, then heads * R/2 rotations.
  ParallelRanges(pool, T, (p.n_dims / 2) * (kExpCost + heads),
                 [&](int64_t b, int64_t e) { RopeTokens(x, b, e, heads, Dh, pos0, p); });
}

}  // namespace QWENRT_CPU_NAMESPACE
