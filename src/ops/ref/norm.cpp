// Reference RMSNorm (plain, strided, fused with the residual add, gated) and L2 norm: sums of
// squares in double, scale in float (llama.cpp CPU). Every RMSNorm form goes through RmsScale and
// the same `(x * scale) * w` product, which is what makes the fused forms bit-equal to their
// compositions.
#include "ops/norm.h"

#include <algorithm>
#include <cmath>

#include "ops/activations.h"

namespace qwenrt::ref {
namespace {

// 1 / sqrt(mean(x^2) + eps) of one row x: [n].
float RmsScale(const float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  return 1.0f / std::sqrt(mean + eps);
}

}  // namespace

void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                 int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * n;
    const float scale = RmsScale(xr, n, eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * w[i];
  }
}

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  RmsNormRows(x, n, w, y, rows, n, eps);
}

void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * n;
    const float* mr = mix + r * n;
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) xr[i] += mr[i];
    const float scale = RmsScale(xr, n, eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * w[i];
  }
}

void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows, int64_t n,
                  float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* zr = z + r * n;
    float* yr = y + r * n;
    const float scale = RmsScale(xr, n, eps);
    for (int64_t i = 0; i < n; ++i) {
      const float normed =
          (xr[i] * scale) * w[i];              // RmsNorm, rounded to float as it would be stored
      yr[i] = ::qwenrt::Silu(zr[i]) * normed;  // then SwiGlu(z, normed)
    }
  }
}

void L2Norm(float* x, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
    for (int64_t i = 0; i < n; ++i) xr[i] *= scale;
  }
}

}  // namespace qwenrt::ref
