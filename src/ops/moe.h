// The mixture-of-experts steps around the expert FFNs (docs/spec/qwen35-architecture.md §9.2):
// routing, grouping the (token, slot) pairs by expert so each expert runs one [n, E] matmul,
// gathering their inputs, scattering their outputs back per (token, slot), the weighted combine in
// selection order, and the sigmoid-gated shared expert's add. The expert FFNs themselves are
// MatMul/SwiGlu.
//
// A (token, slot) pair is i = t*K + j: token t's j-th selected expert (K = experts per token).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

namespace ref {
// Softmax over the X router logits of each token, top-k in descending order (lower index wins
// ties), weights renormalised (sum clamped below at 6.103515625e-5, as llama.cpp).
// logits: [T, X] (overwritten with the probabilities); ids, weights: [T, k].
void MoeRoute(float* logits, int64_t T, int64_t X, int64_t k, int32_t* ids, float* weights);

// Groups the n (token, slot) pairs i = t*k + j by their expert ids[i] (a stable counting sort):
// slots[expert_begin[e] .. expert_begin[e+1]) are the pairs routed to expert e, in increasing i.
// ids: [n] in [0, X); slots: [n]; expert_begin: [X + 1].
void GroupByExpert(const int32_t* ids, int64_t n, int64_t X, int32_t* slots, int32_t* expert_begin);

// dst[i] = src[slots[i] / K]: the token row of each of n pairs.  src: [T, E]; slots: [n]; dst: [n,
// E]
void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E, float* dst);

// dst[slots[i]] = src[i]: each pair's expert output into its (token, slot) row.
// src: [n, E]; slots: [n]; dst: [T*K, E]
void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E, float* dst);

// mix[t] = sum_{j<K} weights[t][j] * yslot[t][j], summed in j order from 0 (so the result does not
// depend on how the pairs were grouped).  yslot: [T, K, E]; weights: [T, K]; mix: [T, E]
void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                float* mix);

// mix[t] += sigmoid(gate[t]) * y[t]: the shared expert's contribution.  mix, y: [T, E]; gate: [T]
void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// The same contracts, tokens (or pairs) split over `pool`, each computed by the ref loop:
// bit-identical to ref. Routing and grouping are cheap and stay ref.
void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E, float* dst,
               ThreadPool& pool);
void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E, float* dst,
                ThreadPool& pool);
void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                float* mix, ThreadPool& pool);
void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E,
                     ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
