// Reference causal attention over the KV cache: two-pass softmax in f32, grouped-query mapping
// h -> h / (H/Hkv) (consecutive query heads share a KV head; docs/spec/qwen35-architecture.md §8
// step 7). K and V are read one element at a time through the paged view (kv_view.h), whatever
// their storage.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qwenrt::ref {

void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scores) {
  const int64_t group = s.H / s.Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
  for (int64_t t = 0; t < s.T; ++t) {
    const int64_t n_keys = s.n_past + t + 1;
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / group;
      const float* qh = q + (t * s.H + h) * s.Dh;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n_keys; ++j) {
        const uint8_t* kj = k.Row(j);
        float dot = 0.0f;
        for (int64_t d = 0; d < s.Dh; ++d) dot += qh[d] * KvElement(k.type, kj, g * s.Dh + d);
        scores[j] = dot * scale;
        mx = std::max(mx, scores[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n_keys; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
      float* oh = out + (t * s.H + h) * s.Dh;
      std::fill(oh, oh + s.Dh, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const uint8_t* vj = v.Row(j);
        const float pj = scores[j] * inv;
        for (int64_t d = 0; d < s.Dh; ++d) oh[d] += pj * KvElement(v.type, vj, g * s.Dh + d);
      }
    }
  }
}

void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores) {
  const uint8_t* kb = reinterpret_cast<const uint8_t*>(k);
  const uint8_t* vb = reinterpret_cast<const uint8_t*>(v);
  Attention(s, q, ContiguousF32Rows(&kb, s.Hkv * s.Dh), ContiguousF32Rows(&vb, s.Hkv * s.Dh), out,
            scores);
}

}  // namespace qwenrt::ref
