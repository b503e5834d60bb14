// The Gated DeltaNet step between the causal conv (conv.h) and the delta rule (gated_delta.h),
// docs/spec/qwen35-architecture.md §7 steps 2-3 and 5-6: the conv output is split into q, k, v; q
// and k are L2-normalised per head (q also scaled by 1/sqrt(Dk), passed as q_scale) and v copied;
// the gates come from the alpha/beta projections: g = ssm_a * softplus(alpha + dt_bias), beta =
// sigmoid(beta).
//
// Layouts (f32, row-major): conv [T, C] with C = 2*Hk*Dk + Hv*Dv, columns q | k | v (GGUF order);
// q, k [T, Hk, Dk]; v [T, Hv, Dv]; alpha, beta [T, Hv] (in place: alpha becomes g); ssm_a,
// dt_bias [Hv]. Shapes are a GatedDeltaShape (T, Hk, Hv, Dk, Dv).
//
// GdnSplit is bit for bit the composition: copy the three column ranges, ref::L2Norm(q), L2Norm(k),
// q *= q_scale, GdnGates (tests/ops_backend_test.cpp). Every row depends only on its own token.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"
#include "ops/gated_delta.h"

namespace qwenrt {

namespace ref {
// g = ssm_a * softplus(alpha + dt_bias) (in place over alpha), beta = sigmoid(beta) (in place).
// alpha, beta: [T, Hv]; ssm_a, dt_bias: [Hv].
void GdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias, int64_t T,
              int64_t Hv);

// The whole step (see above). conv must not overlap q, k or v.
void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
              float* k, float* v, float* alpha, float* beta, const float* ssm_a,
              const float* dt_bias);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// As ref::GdnSplit, tokens split over `pool`, each token computed by the ref loop: bit-identical.
void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
              float* k, float* v, float* alpha, float* beta, const float* ssm_a,
              const float* dt_bias, ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
