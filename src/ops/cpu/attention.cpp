// CPU causal attention: (token, head) pairs in parallel, each with a two-pass softmax over its
// cached keys. Dot products and the V accumulation use 16 independent partial sums so the compiler
// vectorises them; this changes the summation order against ref (rounding only). Each query's
// result depends only on its own row and the cache, so results do not depend on the batch split.
// K/V rows come through a paged view (kv_view.h): f32 rows are read in place, f16 / q8_0 rows are
// widened into a per-thread row first and then go through the same Dot / Axpy, so f16 storage of
// f16-representable values gives exactly the f32-storage result.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

constexpr int64_t kLanes = 16;

float Dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += a[d + l] * b[d + l];
  }
  float sum = 0.0f;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (int64_t l = 0; l < kLanes; ++l) sum += acc[l];
  return sum;
}

void Axpy(float alpha, const float* x, float* y, int64_t n) {  // y += alpha * x
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}


// The Dh elements of KV head g of a stored row: in place for f32, else widened into `scratch`.
const float* HeadRow(const KvView& view, int64_t j, int64_t g, int64_t Dh, float* scratch) {
  const uint8_t* row = view.Row(j);
  if (view.type == KvType::kF32) return reinterpret_cast<const float*>(row) + g * Dh;
  KvDecode(view.type, row, g * Dh, Dh, scratch);
  return scratch;
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v, float* out,
               float* scores, float* rows, ThreadPool& pool) {
  // Everything the workers need behind one pointer: keeps the std::function allocation-free.
  struct Args {
    AttentionShape s;
    const float* q;
    KvView k, v;
    float *out, *scores, *rows;
    int64_t n_max, group;
    float scale;
  } args{s, q, k, v, out, scores, rows, s.n_past + s.T, s.H / s.Hkv,
         1.0f / std::sqrt(static_cast<float>(s.Dh))};
  // Long rows are expensive: hand out pairs one by one when the context is long.
  const int64_t grain = args.n_max > 256 ? 1 : 4;
  // Rows that must be widened are widened once per group of query heads when there are enough
  // (token, KV head) pairs to keep the pool busy (a prefill); a decode step splits by query head.
  const bool widen = k.type != KvType::kF32 || v.type != KvType::kF32;
  if (widen && args.group > 1 && s.T * s.Hkv >= 2 * pool.size()) {
    pool.ParallelForDynamic(s.T * s.Hkv, grain, [a = &args](int64_t b, int64_t e, int thread) {
      const AttentionShape& sh = a->s;
      const int64_t G = a->group;
      float* sc = a->scores + thread * AttentionScoreFloats(a->n_max, G);  // [G, n_max]
      float* mx = sc + G * a->n_max;                                      // [G]
      float* inv = mx + G;                                                // [G]
      float* krow = a->rows + thread * 2 * sh.Dh;
      float* vrow = krow + sh.Dh;
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / sh.Hkv, g = i % sh.Hkv, h0 = g * G;
        const int64_t n_keys = sh.n_past + t + 1;
        const float* q0 = a->q + (t * sh.H + h0) * sh.Dh;
        float* o0 = a->out + (t * sh.H + h0) * sh.Dh;
        std::fill(mx, mx + G, -std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < n_keys; ++j) {
          const float* kj = HeadRow(a->k, j, g, sh.Dh, krow);
          for (int64_t r = 0; r < G; ++r) {
            float& x = sc[r * a->n_max + j];
            x = Dot(q0 + r * sh.Dh, kj, sh.Dh) * a->scale;
            mx[r] = std::max(mx[r], x);
          }
        }
        for (int64_t r = 0; r < G; ++r) {
          float* sr = sc + r * a->n_max;
          float sum = 0.0f;
          for (int64_t j = 0; j < n_keys; ++j) {
            sr[j] = std::exp(sr[j] - mx[r]);
            sum += sr[j];
          }
          inv[r] = 1.0f / sum;
        }
        std::fill(o0, o0 + G * sh.Dh, 0.0f);
        for (int64_t j = 0; j < n_keys; ++j) {
          const float* vj = HeadRow(a->v, j, g, sh.Dh, vrow);
          for (int64_t r = 0; r < G; ++r) Axpy(sc[r * a->n_max + j] * inv[r], vj, o0 + r * sh.Dh, sh.Dh);
        }
      }
    });
    return;
  }
  pool.ParallelForDynamic(s.T * s.H, grain, [a = &args](int64_t b, int64_t e, int thread) {
    const AttentionShape& sh = a->s;
    float* sc = a->scores + thread * a->n_max;
    float* krow = a->rows == nullptr ? nullptr : a->rows + thread * 2 * sh.Dh;  // widened K, then V
    float* vrow = krow == nullptr ? nullptr : krow + sh.Dh;
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / sh.H, h = i % sh.H, g = h / a->group;
      const int64_t n_keys = sh.n_past + t + 1;
      const float* qh = a->q + (t * sh.H + h) * sh.Dh;
      float* oh = a->out + (t * sh.H + h) * sh.Dh;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n_keys; ++j) {
        sc[j] = Dot(qh, HeadRow(a->k, j, g, sh.Dh, krow), sh.Dh) * a->scale;
        mx = std::max(mx, sc[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n_keys; ++j) {
        sc[j] = std::exp(sc[j] - mx);
        sum += sc[j];
      }
      const float inv = 1.0f / sum;
      std::fill(oh, oh + sh.Dh, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) Axpy(sc[j] * inv, HeadRow(a->v, j, g, sh.Dh, vrow), oh, sh.Dh);
    }
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
