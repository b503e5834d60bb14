// Reference GDN split + gates (gdn_split.h): per token, copy q | k | v out of the conv row, L2-norm
// the q and k heads (q then scaled), and the gates, with exactly the operations of the composition
// (copy, L2Norm, `q *= q_scale`, GdnGates).
#include "ops/gdn_split.h"

#include <algorithm>

#include "ops/activations.h"
#include "ops/norm.h"

namespace qwenrt::ref {

void GdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias, int64_t T,
              int64_t Hv) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      float& a = alpha[t * Hv + h];
      a = ssm_a[h] * ::qwenrt::Softplus(a + dt_bias[h]);
      float& b = beta[t * Hv + h];
      b = ::qwenrt::Sigmoid(b);
    }
  }
}

void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
              float* k, float* v, float* alpha, float* beta, const float* ssm_a,
              const float* dt_bias) {
  const int64_t Cq = s.Hk * s.Dk, Cv = s.Hv * s.Dv, C = 2 * Cq + Cv;
  for (int64_t t = 0; t < s.T; ++t) {
    const float* y = conv + t * C;
    float* qt = q + t * Cq;
    float* kt = k + t * Cq;
    std::copy(y, y + Cq, qt);
    std::copy(y + Cq, y + 2 * Cq, kt);
    std::copy(y + 2 * Cq, y + C, v + t * Cv);
    L2Norm(qt, s.Hk, s.Dk, eps);
    L2Norm(kt, s.Hk, s.Dk, eps);
    for (int64_t i = 0; i < Cq; ++i) qt[i] *= q_scale;
  }
  GdnGates(alpha, beta, ssm_a, dt_bias, s.T, s.Hv);
}

}  // namespace qwenrt::ref
