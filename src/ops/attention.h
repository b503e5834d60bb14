// Causal softmax attention over the KV cache (docs/spec/qwen35-architecture.md §8 step 7) and the
// f16 rounding of its inputs. The projections, q/k norms and rope around it are in matmul.h, norm.h
// and rope.h.
//
// Math, per new token t (position n_past + t) and query head h (KV head h / (H/Hkv)):
//   s_j = (q_t,h · k_j,g) / sqrt(Dh)  for the n_past + t + 1 cached positions j <= n_past + t
//   out_t,h = sum_j softmax(s)_j v_j,g
// Each query's result depends only on its own row and the cache, never on the batch split.
#pragma once

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
// cpu::Attention is a tiled kernel (online softmax over fixed absolute key blocks):
//   key chunk   c = keys [c * kAttentionKeyChunk, +kAttentionKeyChunk): a (max, sum, acc[Dh])
//               partial per query row, merged into the row's span state in chunk order;
//   key span    s = keys [s * kAttentionKeySpan, +kAttentionKeySpan): span states merged into the
//               row's total in span order (spans are what decode and short appends split over
//               threads; their partials are kept and merged after).
// A work item holds up to kAttentionTileRows query rows (tokens x the query heads of one KV head).
// The block boundaries are absolute key positions, so a row's bits do not depend on the query
// tiling, the thread count, or whether the call is a prefill or a decode.
inline constexpr int64_t kAttentionKeyChunk = 64;
inline constexpr int64_t kAttentionKeySpan = 1024;
inline constexpr int64_t kAttentionTileRows = 64;
// Query heads per KV head up to this are one work item's heads; more and each head is its own.
inline constexpr int64_t kAttentionMaxGroup = 64;
// Calls of at most this many tokens split the keys over threads when the (token block, KV head)
// items alone would leave threads idle (decode, the short append of a conversation's next turn).
inline constexpr int64_t kAttentionSplitTokens = 32;

// Scratch floats of cpu::Attention for up to `n_keys` cached positions, `group` = H / Hkv query
// heads per KV head of `head_dim` elements, on a pool of `threads`: per thread one tile (widened
// K/V chunk, scores, the rows' span and total states; independent of the context), and the span
// partials of a split call (kAttentionSplitTokens x group rows x spans x (head_dim + 2); shared).
inline int64_t AttentionTileFloats(int64_t head_dim) {
  return 2 * kAttentionKeyChunk * head_dim + kAttentionTileRows * kAttentionKeyChunk +
         2 * kAttentionTileRows * (head_dim + 2);
}
inline int64_t AttentionScratchFloats(int64_t n_keys, int64_t group, int64_t head_dim,
                                      int64_t threads) {
  const int64_t spans = (n_keys + kAttentionKeySpan - 1) / kAttentionKeySpan;
  return threads * AttentionTileFloats(head_dim) +
         kAttentionSplitTokens * group * spans * (head_dim + 2);
}
// As ref::Attention. scratch: AttentionScratchFloats(n_past + T, H / Hkv, Dh, pool.size()) floats.
// f32 rows are read in place; f16 / q8_0 rows are widened once per chunk and work item into the
// tile, so f16 storage of f16-representable values gives exactly the f32-storage result. Per query
// row, with j over the chunk's keys the row sees and d over the head's elements:
//   s_j   = (q . k_j) * scale: one vector accumulator over d, ReduceAdd, then the d tail by fma
//   m_c   = max s_j;  p_j = exp(s_j - m_c) (simd::Exp on whole vectors, std::exp on the j tail)
//   l_c   = sum p_j (lane-wise, ReduceAdd, then the tail); acc_c[d] = fma chain of p_j v_j[d]
//   merge (M, L, A) <- (m, l, acc): M' = max(M, m), a = exp(M - M'), b = exp(m - M'),
//         L = fma(l, b, L a), A[d] = fma(acc[d], b, A[d] a)    (from (-inf, 0, 0))
//   out[d] = A[d] * (1 / L)
// Equal to ref up to rounding.
void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scratch, ThreadPool& pool);
// The same over contiguous f32 rows k, v: [n_past+T, Hkv, Dh]; scratch as above.
// Inline (not a kernel of its own): the CPU dispatch table (cpu_dispatch.h) holds one Attention.
inline void Attention(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* scratch, ThreadPool& pool) {
  const uint8_t* kb = reinterpret_cast<const uint8_t*>(k);
  const uint8_t* vb = reinterpret_cast<const uint8_t*>(v);
  Attention(s, q, ContiguousF32Rows(&kb, s.Hkv * s.Dh), ContiguousF32Rows(&vb, s.Hkv * s.Dh), out,
            scratch, pool);
}

// x[i] = nearest f16 value of x[i] (round to nearest even), in place. n elements. The CPU backend
// applies it to q, k and v before attention, as llama.cpp's CPU path does (F16 KV cache, Q
// converted to F16 for Q·K; qwen35-architecture.md §14 item 2); ref keeps f32.
void RoundToF16(float* x, int64_t n);
}  // namespace QWENRT_CPU_NAMESPACE
