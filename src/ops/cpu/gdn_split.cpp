// CPU GDN split + gates (gdn_split.h): tokens in parallel, each token by the ref loop.
#include "ops/gdn_split.h"

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
              float* k, float* v, float* alpha, float* beta, const float* ssm_a,
              const float* dt_bias, ThreadPool& pool) {
  const int64_t Cq = s.Hk * s.Dk, Cv = s.Hv * s.Dv, C = 2 * Cq + Cv;
  ParallelRanges(pool, s.T, 2 * C + s.Hv * kExpCost, [&](int64_t b, int64_t e) {
    GatedDeltaShape piece = s;
    piece.T = e - b;
    ref::GdnSplit(piece, conv + b * C, eps, q_scale, q + b * Cq, k + b * Cq, v + b * Cv,
                  alpha + b * s.Hv, beta + b * s.Hv, ssm_a, dt_bias);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
