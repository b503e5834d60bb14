// Causal softmax attention over the KV cache (docs/spec/qwen35-architecture.md §8 step 7) and the
// f16 rounding of its inputs. The projections, q/k norms and rope around it are in matmul.h, norm.h
// and rope.h.
//
// Math, per new token t (position n_past + t) and query head h (KV head h / (H/Hkv)):
//   s_j = (q_t,h · k_j,g) / sqrt(Dh)  for the n_past + t + 1 cached positions j <= n_past + t
//   out_t,h = sum_j softmax(s)_j v_j,g
// Each query's result depends only on its own row and the cache, never on the batch split.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"
#include "ops/kv_view.h"

namespace qwenrt {

// Full attention shapes: T new queries at positions n_past .. n_past+T-1 over the cache rows
// 0 .. n_past+T-1 (which already hold the new keys/values). Query head h uses KV head h / (H/Hkv).
struct AttentionShape {
  int64_t T, n_past, H, Hkv, Dh;
};

// A view of contiguous f32 rows [n, Hkv, Dh] as one page; `*base` (the rows' address, as bytes)
// must outlive the view.
inline KvView ContiguousF32Rows(const uint8_t* const* base, int64_t row) {
  return KvView{base, 0, INT64_MAX / 8 / (row > 0 ? row : 1), row * 4, KvType::kF32};
}

namespace ref {
// Two-pass softmax in f32, dots in dimension order; every K/V element read through KvElement.
// q: [T, H, Dh]; k, v: views of the cache rows [n_past+T, Hkv, Dh]; out: [T, H, Dh];
// scores: scratch of at least n_past+T floats.
void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scores);
// The same over contiguous f32 rows k, v: [n_past+T, Hkv, Dh].
void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// A work item of cpu::Attention: up to kAttentionTokBlock query tokens x the query heads of one KV
// head (all of them when H / Hkv <= kAttentionMaxGroup, else one).
inline constexpr int64_t kAttentionTokBlock = 8;
inline constexpr int64_t kAttentionMaxGroup = 64;
// Scores scratch per worker for `n_keys` cached positions and `group` = H / Hkv query heads per KV
// head: the scores of every row of a work item, and each row's 1 / sum.
inline int64_t AttentionScoreFloats(int64_t n_keys, int64_t group) {
  return kAttentionTokBlock * std::min(group, kAttentionMaxGroup) * (n_keys + 2);
}
// As ref::Attention, split over the pool in work items of a few tokens x the query heads of one
// KV head (fewer heads per item when there are too few items, as in decode), so that each K/V row
// read (and widened from f16 / q8_0) serves all the rows of an item; the arithmetic of each
// (token, head) is the same whatever the split. scores: [pool.size(),
// AttentionScoreFloats(n_past+T, H/Hkv)]. rows: [pool.size(), 2 * Dh] scratch for widening f16 /
// q8_0 rows (may be null when both views are f32, which are read in place). Vectorised dot products
// and exp: equal to ref up to rounding; a row widened from f16 gives exactly the result of the same
// values stored as f32.
void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scores, float* rows, ThreadPool& pool);
// The same over contiguous f32 rows k, v: [n_past+T, Hkv, Dh]; scores as above.
// Inline (not a kernel of its own): the CPU dispatch table (cpu_dispatch.h) holds one Attention.
inline void Attention(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* scores, ThreadPool& pool) {
  const uint8_t* kb = reinterpret_cast<const uint8_t*>(k);
  const uint8_t* vb = reinterpret_cast<const uint8_t*>(v);
  Attention(s, q, ContiguousF32Rows(&kb, s.Hkv * s.Dh), ContiguousF32Rows(&vb, s.Hkv * s.Dh), out,
            scores, nullptr, pool);
}

// x[i] = nearest f16 value of x[i] (round to nearest even), in place. n elements. The CPU backend
// applies it to q, k and v before attention, as llama.cpp's CPU path does (F16 KV cache, Q
// converted to F16 for Q·K; qwen35-architecture.md §14 item 2); ref keeps f32.
void RoundToF16(float* x, int64_t n);
}  // namespace QWENRT_CPU_NAMESPACE
