// Reference partial rotary embedding, NEOX pairing (i, i + R/2); dims >= R pass through.
#include "ops/rope.h"

#include <cmath>

namespace qwenrt::ref {

void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p) {
  const int64_t half = p.n_dims / 2;
  const float theta_scale = std::pow(p.base, -2.0f / static_cast<float>(p.n_dims));
  for (int64_t t = 0; t < T; ++t) {
    const float pos = static_cast<float>(pos0 + t);
    for (int64_t h = 0; h < heads; ++h) {
      float* xh = x + (t * heads + h) * Dh;
      float theta = pos;  // theta_i = pos * theta_scale^i, iteratively (llama.cpp CPU)
      for (int64_t i = 0; i < half; ++i) {
        const bool rotate = p.pair_uses_pos == nullptr || (*p.pair_uses_pos)[i];
        float c, s;
        RopePairCosSin(p, i, theta, rotate, &c, &s);
        const float x0 = xh[i], x1 = xh[i + half];
        xh[i] = x0 * c - x1 * s;
        xh[i + half] = x0 * s + x1 * c;
        theta *= theta_scale;
      }
    }
  }
}

}  // namespace qwenrt::ref
