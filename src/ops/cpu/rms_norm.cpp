// CPU RMSNorm: rows in parallel, each row exactly as the reference computes it.
#include "ops/cpu/ops.h"

namespace qwenrt::cpu {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps, ThreadPool& pool) {
  if (rows * n < 16384) return ref::RmsNorm(x, w, y, rows, n, eps);  // not worth waking threads
  // One captured pointer keeps the std::function allocation-free (thread_pool.h).
  struct Args { const float *x, *w; float* y; int64_t n; float eps; } args{x, w, y, n, eps};
  pool.ParallelFor(rows, [a = &args](int64_t r0, int64_t r1, int) {
    ref::RmsNorm(a->x + r0 * a->n, a->w, a->y + r0 * a->n, r1 - r0, a->n, a->eps);
  });
}

}  // namespace qwenrt::cpu
