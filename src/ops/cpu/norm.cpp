// CPU row norms (norm.h): rows in parallel, each row exactly as the reference computes it.
#include "ops/norm.h"

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
             ThreadPool& pool) {
  ParallelRanges(pool, rows, n, [&](int64_t b, int64_t e) {
    ref::RmsNorm(x + b * n, w, y + b * n, e - b, n, eps);
  });
}

void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                 int64_t n, float eps, ThreadPool& pool) {
  ParallelRanges(pool, rows, n, [&](int64_t b, int64_t e) {
    ref::RmsNormRows(x + b * x_stride, x_stride, w, y + b * n, e - b, n, eps);
  });
}

void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                float eps, ThreadPool& pool) {
  ParallelRanges(pool, rows, 2 * n, [&](int64_t b, int64_t e) {
    ref::AddRmsNorm(x + b * n, mix + b * n, w, y + b * n, e - b, n, eps);
  });
}

void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows, int64_t n,
                  float eps, ThreadPool& pool) {
  ParallelRanges(pool, rows, n * kExpCost, [&](int64_t b, int64_t e) {
    ref::GatedRmsNorm(x + b * n, w, z + b * n, y + b * n, e - b, n, eps);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
