// Reference MoE steps (moe.h): the router (softmax over all experts, top-k, descending, lower index
// wins ties, renormalised weights with llama.cpp's clamp on the sum), the grouping by expert, and
// the row moves and weighted sums around the expert FFNs.
#include "ops/moe.h"

#include <algorithm>
#include <cmath>

#include "ops/activations.h"

namespace qwenrt::ref {

void MoeRoute(float* logits, int64_t T, int64_t X, int64_t k, int32_t* ids, float* weights) {
  for (int64_t t = 0; t < T; ++t) {
    float* p = logits + t * X;
    const float mx = *std::max_element(p, p + X);
    float sum = 0.0f;
    for (int64_t e = 0; e < X; ++e) {
      p[e] = std::exp(p[e] - mx);
      sum += p[e];
    }
    for (int64_t e = 0; e < X; ++e) p[e] /= sum;
    int32_t* id = ids + t * k;
    // Selection by repeated arg-max: k is small (<= 16 in practice).
    for (int64_t j = 0; j < k; ++j) {
      int32_t best = -1;
      for (int64_t e = 0; e < X; ++e) {
        if (std::find(id, id + j, static_cast<int32_t>(e)) != id + j) continue;
        if (best < 0 || p[e] > p[best]) best = static_cast<int32_t>(e);
      }
      id[j] = best;
    }
    float wsum = 0.0f;
    for (int64_t j = 0; j < k; ++j) wsum += p[id[j]];
    wsum = std::max(wsum, 6.103515625e-5f);
    for (int64_t j = 0; j < k; ++j) weights[t * k + j] = p[id[j]] / wsum;
  }
}

void GroupByExpert(const int32_t* ids, int64_t n, int64_t X, int32_t* slots,
                   int32_t* expert_begin) {
  std::fill(expert_begin, expert_begin + X + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++expert_begin[ids[i] + 1];
  for (int64_t e = 0; e < X; ++e) expert_begin[e + 1] += expert_begin[e];
  for (int64_t i = 0; i < n; ++i) slots[expert_begin[ids[i]]++] = static_cast<int32_t>(i);
  for (int64_t e = X; e > 0; --e) expert_begin[e] = expert_begin[e - 1];  // undo the ++ shift
  expert_begin[0] = 0;
}

void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E,
               float* dst) {
  for (int64_t i = 0; i < n; ++i) std::copy_n(src + (slots[i] / K) * E, E, dst + i * E);
}

void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E, float* dst) {
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(src + i * E, E, dst + static_cast<int64_t>(slots[i]) * E);
}

void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                float* mix) {
  for (int64_t t = 0; t < T; ++t) {
    float* m = mix + t * E;
    std::fill(m, m + E, 0.0f);
    for (int64_t j = 0; j < K; ++j) {
      const float wt = weights[t * K + j];
      const float* y = yslot + (t * K + j) * E;
      for (int64_t i = 0; i < E; ++i) m[i] += wt * y[i];
    }
  }
}

void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E) {
  for (int64_t t = 0; t < T; ++t) {
    const float gamma = ::qwenrt::Sigmoid(gate[t]);
    float* m = mix + t * E;
    const float* yt = y + t * E;
    for (int64_t i = 0; i < E; ++i) m[i] += gamma * yt[i];
  }
}

}  // namespace qwenrt::ref
