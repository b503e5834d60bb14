// Reference RMSNorm and L2 norm: sums of squares in double, scale in float (llama.cpp CPU).
#include <algorithm>
#include <cmath>

#include "ops/ref/ops.h"

namespace qwenrt::ref {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * w[i];
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
