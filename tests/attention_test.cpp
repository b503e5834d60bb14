// The tiled CPU attention (ops/attention.h): against exact math and ref::Attention on odd shapes
// (query heads per KV head, head sizes that are not whole vectors, contexts across key chunks and
// spans, f32 / f16 / q8_0 pages), and its invariants: a prefill equals the same tokens decoded one
// at a time and a short append at depth equals the rows of a full prefill, bit for bit; results do
// not depend on the pool size; the kernel stays inside the scratch AttentionScratchFloats sizes.
#include "ops/attention.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kv_pages_test_util.h"

namespace qwenrt {
namespace {

using test::Gauss;
using test::MaxAbs;
using test::Paged;

bool Same(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// cpu::Attention with exactly AttentionScratchFloats(n_keys, ...) floats of scratch (n_keys >=
// n_past + T, as a backend reserves for its cache) followed by a guard that must stay untouched.
std::vector<float> Cpu(const AttentionShape& s, const float* q, const Paged& kv, ThreadPool& pool,
                       int64_t n_keys = 0) {
  const int64_t need =
      cpu::AttentionScratchFloats(std::max(n_keys, s.n_past + s.T), s.H / s.Hkv, s.Dh, pool.size());
  const int64_t guard = 1024;
  std::vector<float> scratch(static_cast<size_t>(need + guard), 12345.0f);
  std::vector<float> out(static_cast<size_t>(s.T * s.H * s.Dh));
  cpu::Attention(s, q, kv.K(), kv.V(), out.data(), scratch.data(), pool);
  bool intact = true;
  for (int64_t i = need; i < need + guard; ++i) intact = intact && scratch[i] == 12345.0f;
  CHECK(intact);
  return out;
}

// softmax(q k^T / sqrt(Dh)) v in double over the stored (decoded) K/V values.
std::vector<float> Exact(const AttentionShape& s, const float* q, const Paged& kv) {
  const int64_t group = s.H / s.Hkv, n = s.n_past + s.T;
  std::vector<float> out(static_cast<size_t>(s.T * s.H * s.Dh));
  std::vector<double> p(static_cast<size_t>(n)), o(static_cast<size_t>(s.Dh));
  for (int64_t t = 0; t < s.T; ++t) {
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / group, keys = s.n_past + t + 1;
      const float* qh = q + (t * s.H + h) * s.Dh;
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < s.Dh; ++d)
          dot += double(qh[d]) * KvElement(kv.type, kv.K().Row(j), g * s.Dh + d);
        p[j] = dot / std::sqrt(double(s.Dh));
        mx = std::max(mx, p[j]);
      }
      for (int64_t j = 0; j < keys; ++j) sum += (p[j] = std::exp(p[j] - mx));
      std::fill(o.begin(), o.end(), 0.0);
      for (int64_t j = 0; j < keys; ++j) {
        for (int64_t d = 0; d < s.Dh; ++d)
          o[d] += p[j] / sum * KvElement(kv.type, kv.V().Row(j), g * s.Dh + d);
      }
      for (int64_t d = 0; d < s.Dh; ++d) out[(t * s.H + h) * s.Dh + d] = float(o[d]);
    }
  }
  return out;
}

TEST_CASE("tiled attention: cpu vs exact math and ref, odd shapes, every storage type", "[cpu]") {
  ThreadPool pool(3);
  struct Case {
    int64_t T, n_past, H, Hkv, Dh;
    KvType type;
    int64_t page;
    float q_scale;  // larger: peakier softmax, the running max moves between chunks
  };
  const Case cases[] = {
      {1, 0, 6, 2, 40, KvType::kF32, 7, 1.0f},
      {7, 60, 6, 2, 40, KvType::kF16, 64, 1.0f},
      {40, 63, 5, 5, 17, KvType::kF32, 33, 1.0f},
      {3, 1020, 8, 1, 32, KvType::kQ8_0, 100, 1.0f},
      {25, 1030, 6, 2, 64, KvType::kF16, 256, 3.0f},
      {33, 2040, 4, 2, 36, KvType::kF32, 1000, 4.0f},
      {1, 2100, 12, 4, 64, KvType::kQ8_0, 512, 2.0f},
      {70, 0, 3, 1, 8, KvType::kF16, 16, 1.0f},
  };
  for (const Case& c : cases) {
    const AttentionShape s{c.T, c.n_past, c.H, c.Hkv, c.Dh};
    const int64_t n = c.n_past + c.T, row = c.Hkv * c.Dh;
    const auto q = Gauss(c.T * c.H * c.Dh, 1, c.q_scale);
    // A drift in the keys makes later positions score higher for some heads: the max of later
    // chunks exceeds the earlier ones' (the rescale of the running state is exercised).
    auto k = Gauss(n * row, 2);
    for (int64_t j = 0; j < n; ++j) k[j * row] += 2e-3f * static_cast<float>(j);
    const auto v = Gauss(n * row, 3);
    const Paged kv(c.type, k, v, n, row, c.page);
    const std::vector<float> o = Cpu(s, q.data(), kv, pool), exact = Exact(s, q.data(), kv);
    std::vector<float> o_ref(o.size()), sc(static_cast<size_t>(n));
    ref::Attention(s, q.data(), kv.K(), kv.V(), o_ref.data(), sc.data());
    INFO("T " << c.T << " n_past " << c.n_past << " H " << c.H << "/" << c.Hkv << " Dh " << c.Dh
              << " " << KvTypeName(c.type));
    CHECK(MaxAbs(o, exact) <= 1e-5);
    CHECK(MaxAbs(o, o_ref) <= 5e-5);
  }
}

TEST_CASE("tiled attention: prefill == decode one token at a time == short append, bit for bit",
          "[cpu]") {
  // Pool 3 with 2 KV heads: a decode step splits its keys over threads (span partials merged),
  // a 40-token prefill does not; the same rows must come out either way.
  ThreadPool pool(3);
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    const int64_t H = 8, Hkv = 2, Dh = 64, n = 1100, row = Hkv * Dh;
    const auto q = Gauss(n * H * Dh, 4, 2.0f), k = Gauss(n * row, 5), v = Gauss(n * row, 6);
    const Paged kv(type, k, v, n, row, 128);
    // The whole context as one prefill.
    const std::vector<float> full = Cpu({n, 0, H, Hkv, Dh}, q.data(), kv, pool);
    INFO(KvTypeName(type));
    // Decode steps around the chunk and span boundaries (1023 / 1024 / 1025) and at depth.
    for (int64_t p : {0, 1, 63, 64, 65, 1023, 1024, 1025, 1099}) {
      const std::vector<float> one = Cpu({1, p, H, Hkv, Dh}, q.data() + p * H * Dh, kv, pool, n);
      CHECK(Same(one.data(), full.data() + p * H * Dh, static_cast<size_t>(H * Dh)));
    }
    // Appends: turn 2 of a conversation (25 tokens at depth), and blocks across the boundaries.
    for (const auto& [T, p] :
         {std::pair<int64_t, int64_t>{25, 1075}, {33, 1000}, {40, 1010}, {5, 1022}, {70, 1030}}) {
      const std::vector<float> app = Cpu({T, p, H, Hkv, Dh}, q.data() + p * H * Dh, kv, pool, n);
      CHECK(Same(app.data(), full.data() + p * H * Dh, static_cast<size_t>(T * H * Dh)));
    }
  }
}

TEST_CASE("tiled attention: the pool size changes no bit", "[cpu]") {
  const int64_t n = 1500, row = 3 * 48;
  const auto q = Gauss(40 * 6 * 48, 7), k = Gauss(n * row, 8), v = Gauss(n * row, 9);
  const Paged kv(KvType::kF16, k, v, n, row, 200);
  for (const AttentionShape s :
       {AttentionShape{1, 1499, 6, 3, 48}, AttentionShape{25, 1475, 6, 3, 48},
        AttentionShape{40, 1460, 6, 3, 48}}) {
    std::vector<std::vector<float>> outs;
    for (int threads : {1, 2, 3, 5}) {
      ThreadPool pool(threads);
      outs.push_back(Cpu(s, q.data(), kv, pool));
    }
    INFO("T " << s.T);
    for (size_t i = 1; i < outs.size(); ++i)
      CHECK(Same(outs[0].data(), outs[i].data(), outs[0].size()));
  }
}

TEST_CASE("tiled attention: scratch per thread does not grow with the context", "[cpu]") {
  // The per-thread tile is independent of the context; only the shared split partials grow, by
  // kAttentionSplitTokens x group rows x (Dh + 2) per span of keys.
  const int64_t group = 4, Dh = 256;
  const int64_t a = cpu::AttentionScratchFloats(1024, group, Dh, 1);
  const int64_t b = cpu::AttentionScratchFloats(1024 * 64, group, Dh, 1);
  const int64_t c = cpu::AttentionScratchFloats(1024 * 64, group, Dh, 2);
  CHECK(b - a == 63 * cpu::kAttentionSplitTokens * group * (Dh + 2));
  CHECK(c - b == cpu::AttentionTileFloats(Dh));
  CHECK(cpu::AttentionTileFloats(Dh) < 100'000);  // 400 KB: widened K/V chunk, scores, states
}

}  // namespace
}  // namespace qwenrt
