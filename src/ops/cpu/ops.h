// Threaded CPU versions of the reference ops in ref/ops.h (same math, same results up to rounding
// where noted). Each splits independent rows/heads/channels over the ThreadPool.
#pragma once

#include <cstdint>

#include "ops/ref/ops.h"
#include "base/thread_pool.h"

namespace qwenrt::cpu {

// As ref::RmsNorm, rows split over the pool (bit-identical to ref).
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps, ThreadPool& pool);

// As ref::Attention, (token, head) pairs split over the pool. scores: [pool.size(), n_past+T].
// Vectorised dot products: equal to ref up to the summation order.
void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores, ThreadPool& pool);

// x[i] = nearest f16 value of x[i] (round to nearest even), in place. n elements.
void RoundToF16(float* x, int64_t n);

}  // namespace qwenrt::cpu
