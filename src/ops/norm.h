// Row norms of the forward pass: RMSNorm (every sub-block input, the q/k norms, the final norm),
// its two fused forms (the residual add with the next norm; the GDN output's gated norm) and the L2
// norm of the GDN q/k heads. Sums of squares in double, scale in float (llama.cpp CPU,
// docs/spec/qwen35-architecture.md §14).
//
// Every row is computed the same way whatever `rows` is, and each fused op is bit for bit its
// composition: AddRmsNorm == Add then RmsNorm; GatedRmsNorm == RmsNorm then SwiGlu(z, .)
// (activations.h). tests/ops_backend_test.cpp checks both on every backend.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

namespace ref {
// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w      x, y: [rows, n] (may alias); w: [n]
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// RmsNorm of rows that start `x_stride` floats apart (the query rows inside the joint q/gate
// projection [T, H, 2, Dh]: x_stride = 2*Dh). x: rows at x + r * x_stride; y: [rows, n]; w: [n].
// y must not overlap x unless x_stride == n.
void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                 int64_t n, float eps);

// x += mix, then y = RmsNorm(x) * w: the residual add fused with the next sub-block's norm.
// x, mix, y: [rows, n]; y must not alias x or mix.
void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                float eps);

// y = RmsNorm(x) * w * silu(z): the GDN output's gated norm (qwen35-architecture.md §7 step 9).
// x, z, y: [rows, n] (y may alias x); w: [n].
void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows, int64_t n,
                  float eps);

// x[r] /= max(||x[r]||, eps), in place.                  x: [rows, n]
void L2Norm(float* x, int64_t rows, int64_t n, float eps);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// The same contracts, rows split over `pool` (small calls run inline), each row computed exactly
// as ref computes it: bit-identical to ref.
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
             ThreadPool& pool);
void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                 int64_t n, float eps, ThreadPool& pool);
void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                float eps, ThreadPool& pool);
void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows, int64_t n,
                  float eps, ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
