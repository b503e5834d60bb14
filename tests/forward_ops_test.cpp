// The forward pass's own ops (attention.h, norm.h, rope.h, moe.h): the CPU attention against the
// reference, and the reference ops against hand-computed values. The op x backend table is
// ops_backend_test.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "ops/attention.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/quant.h"
#include "ops/rope.h"

namespace qwenrt {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

TEST_CASE("cpu::Attention matches ref (GQA, causal over cache + batch)", "[cpu]") {
  ThreadPool pool(3);
  for (int64_t T : {1, 7, 63}) {
    for (int64_t n_past : {0, 5, 300}) {
      const AttentionShape s{T, n_past, 6, 2, 40};
      const int64_t n = n_past + T;
      const auto q = Random(T * s.H * s.Dh, 7), k = Random(n * s.Hkv * s.Dh, 8),
                 v = Random(n * s.Hkv * s.Dh, 9);
      std::vector<float> o_ref(q.size()), o_cpu(q.size()), sc(n),
          sc_cpu(cpu::AttentionScratchFloats(n, s.H / s.Hkv, s.Dh, pool.size()));
      ref::Attention(s, q.data(), k.data(), v.data(), o_ref.data(), sc.data());
      cpu::Attention(s, q.data(), k.data(), v.data(), o_cpu.data(), sc_cpu.data(), pool);
      INFO("T " << T << " n_past " << n_past);
      CHECK(MaxAbsDiff(o_ref, o_cpu) <= 1e-5);
    }
  }
  // More query heads per KV head than a work item holds (kAttentionMaxGroup): one head per item.
  // Every split gives the same bits: the whole batch, then the tokens one at a time.
  for (const AttentionShape s : {AttentionShape{9, 3, 2 * (cpu::kAttentionMaxGroup + 1), 2, 24},
                                 AttentionShape{17, 2, 12, 3, 33}}) {
    const int64_t n = s.n_past + s.T;
    const auto q = Random(s.T * s.H * s.Dh, 17), k = Random(n * s.Hkv * s.Dh, 18),
               v = Random(n * s.Hkv * s.Dh, 19);
    std::vector<float> o_ref(q.size()), o_cpu(q.size()), o_one(q.size()), sc(n),
        sc_cpu(cpu::AttentionScratchFloats(n, s.H / s.Hkv, s.Dh, pool.size()));
    ref::Attention(s, q.data(), k.data(), v.data(), o_ref.data(), sc.data());
    cpu::Attention(s, q.data(), k.data(), v.data(), o_cpu.data(), sc_cpu.data(), pool);
    CHECK(MaxAbsDiff(o_ref, o_cpu) <= 1e-5);
    for (int64_t t = 0; t < s.T; ++t) {
      const AttentionShape one{1, s.n_past + t, s.H, s.Hkv, s.Dh};
      cpu::Attention(one, q.data() + t * s.H * s.Dh, k.data(), v.data(),
                     o_one.data() + t * s.H * s.Dh, sc_cpu.data(), pool);
    }
    CHECK(o_one == o_cpu);
  }
  // One key: the output is that key's value (softmax of one element is 1); head h uses KV head h/3.
  const AttentionShape s{1, 0, 6, 2, 4};
  std::vector<float> q(24, 1.0f), k(8, 0.5f), v = {1, 2, 3, 4, 5, 6, 7, 8}, o(24), sc(1);
  ref::Attention(s, q.data(), k.data(), v.data(), o.data(), sc.data());
  CHECK(std::vector<float>(o.begin(), o.begin() + 4) == std::vector<float>{1, 2, 3, 4});
  CHECK(std::vector<float>(o.begin() + 12, o.begin() + 16) == std::vector<float>{5, 6, 7, 8});
}

TEST_CASE("norms, rope, routing, f16 rounding", "[ref][cpu]") {
  ThreadPool pool(2);
  // RmsNorm: x = (3, 4) -> mean square 12.5.
  std::vector<float> x = {3, 4}, w = {1, 2}, y(2);
  ref::RmsNorm(x.data(), w.data(), y.data(), 1, 2, 0.0f);
  CHECK(y[0] == Approx(3 / std::sqrt(12.5f)));
  CHECK(y[1] == Approx(8 / std::sqrt(12.5f)));
  const auto big = Random(37 * 1000, 11), wb = Random(1000, 12);
  std::vector<float> r1(big.size()), r2(big.size());
  ref::RmsNorm(big.data(), wb.data(), r1.data(), 37, 1000, 1e-6f);
  cpu::RmsNorm(big.data(), wb.data(), r2.data(), 37, 1000, 1e-6f, pool);
  CHECK(r1 == r2);
  // L2Norm with the eps floor.
  std::vector<float> l = {3, 4, 0, 0};
  ref::L2Norm(l.data(), 2, 2, 1e-6f);
  CHECK(l == std::vector<float>{0.6f, 0.8f, 0, 0});

  // Rope: position 0 is the identity; pair (i, i + R/2) rotates by p * base^(-2i/R); dims >= R
  // kept.
  std::vector<bool> uses(2, true);
  RopeParams rp{4, 100.0f, 1.0f, &uses, {}};
  std::vector<float> h = {1, 1, 0, 0, 9, 9};  // one head, Dh = 6, R = 4
  ref::Rope(h.data(), 1, 1, 6, 0, rp);
  CHECK(h == std::vector<float>{1, 1, 0, 0, 9, 9});
  ref::Rope(h.data(), 1, 1, 6, 3, rp);
  CHECK(h[0] == Approx(std::cos(3.0f)));
  CHECK(h[2] == Approx(std::sin(3.0f)));
  CHECK(h[1] == Approx(std::cos(0.3f)));  // theta_1 = 3 * 100^(-1/2)
  CHECK(h[3] == Approx(std::sin(0.3f)));
  CHECK(h[4] == 9);
  CHECK(h[5] == 9);
  uses[1] = false;  // an IMROPE pair in the "extra" section sees position 0
  std::vector<float> h2 = {1, 1, 0, 0};
  ref::Rope(h2.data(), 1, 1, 4, 3, rp);
  CHECK(h2[1] == 1.0f);
  CHECK(h2[3] == 0.0f);

  // Routing: softmax, top-2 in descending order, renormalised.
  std::vector<float> logits = {0.0f, 2.0f, 1.0f, -1.0f};
  std::vector<int32_t> ids(2);
  std::vector<float> wts(2);
  ref::MoeRoute(logits.data(), 1, 4, 2, ids.data(), wts.data());
  CHECK(ids == std::vector<int32_t>{1, 2});
  CHECK(wts[0] == Approx(std::exp(2.0f) / (std::exp(2.0f) + std::exp(1.0f))));
  CHECK(wts[0] + wts[1] == Approx(1.0f));

  // f16 rounding: vector path == scalar conversion, including ties, subnormals and overflow.
  auto vals = Random(1003, 13, 100.0f);
  vals[0] = 65520.0f;
  vals[1] = 1e-7f;
  vals[2] = 1.0f + 1.0f / 2048.0f;  // exactly halfway between two f16 values
  std::vector<float> a = vals;
  cpu::RoundToF16(a.data(), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < vals.size(); ++i) CHECK(a[i] == Fp16ToFp32(Fp32ToFp16(vals[i])));
}

}  // namespace
}  // namespace qwenrt
