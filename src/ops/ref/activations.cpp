// Reference element-wise ops and the GDN gate computation.
#include "ops/ref/ops.h"

namespace qwenrt::ref {

void GdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias, int64_t T, int64_t Hv) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      float& a = alpha[t * Hv + h];
      a = ssm_a[h] * ::qwenrt::Softplus(a + dt_bias[h]);
      float& b = beta[t * Hv + h];
      b = ::qwenrt::Sigmoid(b);
    }
  }
}

void Add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void Silu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = ::qwenrt::Silu(x[i]);
}

void SwiGlu(const float* gate, float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) up[i] = ::qwenrt::Silu(gate[i]) * up[i];
}

void MulSigmoid(float* x, const float* gate, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= ::qwenrt::Sigmoid(gate[i]);
}

}  // namespace qwenrt::ref
