// Reference element-wise activations (activations.h): plain loops, std::exp.
#include "ops/activations.h"

namespace qwenrt::ref {

void Add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void Silu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = ::qwenrt::Silu(x[i]);
}

void SwiGlu(const float* gate, float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) up[i] = ::qwenrt::Silu(gate[i]) * up[i];
}

void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * n;
    const float* gr = gate + r * gate_stride;
    for (int64_t i = 0; i < n; ++i) xr[i] *= ::qwenrt::Sigmoid(gr[i]);
  }
}

}  // namespace qwenrt::ref
