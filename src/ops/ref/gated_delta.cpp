// Reference gated delta rule: the plain scalar recurrence of docs/spec/qwen35-architecture.md §7
// step 8, one value head and one token at a time, in f32 with the obvious loop order. No SIMD, no
// threads: this is the oracle the CPU and CUDA forms are tested against.
#include "ops/gated_delta.h"

#include <cmath>

namespace qwenrt::ref {

void GatedDelta(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                const float* g, const float* beta, float* state, float* out) {
  const int64_t T = shape.T, Hk = shape.Hk, Hv = shape.Hv, Dk = shape.Dk, Dv = shape.Dv;
  for (int64_t h = 0; h < Hv; ++h) {
    const int64_t hk = h % Hk;       // tiled head mapping (qwen35-architecture.md §7 step 7)
    float* S = state + h * Dv * Dk;  // S[i][j] at S[j * Dk + i]
    for (int64_t t = 0; t < T; ++t) {
      const float* qt = q + (t * Hk + hk) * Dk;  // [Dk]
      const float* kt = k + (t * Hk + hk) * Dk;  // [Dk]
      const float* vt = v + (t * Hv + h) * Dv;   // [Dv]
      const float alpha = std::exp(g[t * Hv + h]);
      const float b = beta[t * Hv + h];
      float* ot = out + (t * Hv + h) * Dv;  // [Dv]
      // S <- alpha S
      for (int64_t j = 0; j < Dv; ++j) {
        for (int64_t i = 0; i < Dk; ++i) S[j * Dk + i] *= alpha;
      }
      for (int64_t j = 0; j < Dv; ++j) {
        // r_j = v_j - (S^T k)_j ;  S[:, j] += k * beta * r_j
        float sk = 0.0f;
        for (int64_t i = 0; i < Dk; ++i) sk += S[j * Dk + i] * kt[i];
        const float r = b * (vt[j] - sk);
        for (int64_t i = 0; i < Dk; ++i) S[j * Dk + i] += kt[i] * r;
      }
      // o_j = (S^T q)_j
      for (int64_t j = 0; j < Dv; ++j) {
        float o = 0.0f;
        for (int64_t i = 0; i < Dk; ++i) o += S[j * Dk + i] * qt[i];
        ot[j] = o;
      }
    }
  }
}

}  // namespace qwenrt::ref
