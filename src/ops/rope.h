// Partial rotary position embedding of the attention q/k heads (docs/spec/qwen35-architecture.md
// §8.1), NEOX pairing (i, i + R/2) over the first R dims of each head; dims >= R pass through.
// IMROPE sections arrive as a per-pair flag: a pair outside the text section sees position 0 (the
// identity).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

// theta_i = p * freq_scale * base^(-2i/R), computed iteratively in f32 as llama.cpp CPU does.
struct RopeParams {
  int64_t n_dims = 0;  // R
  float base = 10000.0f;
  float freq_scale = 1.0f;
  const std::vector<bool>* pair_uses_pos = nullptr;  // [R/2]; false: pair sees position 0
};

namespace ref {
// Rotates each head of x in place at positions pos0 + t.  x: [T, heads, Dh]
void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// As ref::Rope, tokens split over `pool`, each token's (cos, sin) table computed once for all its
// heads with ref's operations: bit-identical to ref.
void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p,
          ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
