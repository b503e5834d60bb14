// The three forms of the gated delta rule (ref::GatedDelta, cpu::GatedDeltaRecurrent,
// cpu::GatedDeltaChunk) against each other on outputs and final state, plus a hand-computed case,
// split invariance (state carried across calls), and the tiled value->key head mapping (h % Hk).
//
// Tolerances, as max |a - b| / max |b| over the whole tensor (b = the reference):
// - recurrent vs ref: 1e-5. Same operation order per state column; only the summation order of
//   the Dk-long dot products (SIMD lanes) and FMA contraction differ, i.e. a few ulps per step,
//   and the recurrence is contractive (|I - beta k k^T| <= 1, alpha <= 1), so errors do not grow.
//   Observed: <= 6e-7.
// - chunk vs ref: 2e-5. The chunked form reassociates sums across up to 64 tokens (triangular
//   solve, exp(gamma_i - gamma_j) instead of step-by-step decay, GEMM summation order), so
//   rounding differs more, but stays f32-level and bounded per chunk. Observed: <= 1e-6 (after
//   summing gamma in double; an f32 cumsum gave 7e-5 with strong decays).
// Relative to the max |value| rather than element-wise because single outputs can be near zero.
#include "ops/gated_delta.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "alloc_counter.h"
#include "base/thread_pool.h"
#include "test_util.h"

namespace qwenrt {
namespace {

constexpr double kRecurrentTol = 1e-5;
constexpr double kChunkTol = 2e-5;

struct Inputs {
  GatedDeltaShape shape;
  std::vector<float> q, k, v, g, beta, state;  // state: the initial state
};

// Realistic ranges: q, k L2-normalised per head, q scaled by 1/sqrt(Dk); v ~ N(0, 1);
// g in [-5, 0] with ~20% of tokens at ~0 (no decay, the hardest case for accumulation);
// beta = sigmoid(N(0, 2)) in (0, 1); initial state ~ U(-1, 1).
Inputs MakeInputs(const GatedDeltaShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  Inputs in;
  in.shape = s;
  auto fill_heads = [&](std::vector<float>& x, float scale) {
    x.resize(s.T * s.Hk * s.Dk);
    for (int64_t row = 0; row < s.T * s.Hk; ++row) {
      float* p = x.data() + row * s.Dk;
      double ss = 0;
      for (int64_t i = 0; i < s.Dk; ++i) {
        p[i] = normal(rng);
        ss += double(p[i]) * p[i];
      }
      const float inv = float(1.0 / std::max(std::sqrt(ss), 1e-6));
      for (int64_t i = 0; i < s.Dk; ++i) p[i] *= inv * scale;
    }
  };
  fill_heads(in.q, 1.0f / std::sqrt(float(s.Dk)));
  fill_heads(in.k, 1.0f);
  in.v.resize(s.T * s.Hv * s.Dv);
  for (auto& x : in.v) x = normal(rng);
  in.g.resize(s.T * s.Hv);
  for (auto& x : in.g) x = uni(rng) < 0.2f ? -1e-4f * uni(rng) : -5.0f * uni(rng);
  in.beta.resize(s.T * s.Hv);
  for (auto& x : in.beta) x = 1.0f / (1.0f + std::exp(-2.0f * normal(rng)));
  in.state.resize(s.Hv * s.Dv * s.Dk);
  for (auto& x : in.state) x = 2.0f * uni(rng) - 1.0f;
  return in;
}

struct Result {
  std::vector<float> out, state;
};

enum class Form { kRef, kRecurrent, kChunk, kDispatch };

const char* FormName(Form f) {
  switch (f) {
    case Form::kRef:
      return "ref";
    case Form::kRecurrent:
      return "recurrent";
    case Form::kChunk:
      return "chunk";
    case Form::kDispatch:
      return "cpu::GatedDelta";
  }
  return "?";
}

// Runs `form` over tokens [t0, t1) of `in`, starting from (and updating) `state`; writes outputs
// into out rows [t0, t1).
void RunRange(Form form, const Inputs& in, int64_t t0, int64_t t1, std::vector<float>& state,
              std::vector<float>& out, ThreadPool& pool) {
  GatedDeltaShape s = in.shape;
  s.T = t1 - t0;
  const float* q = in.q.data() + t0 * s.Hk * s.Dk;
  const float* k = in.k.data() + t0 * s.Hk * s.Dk;
  const float* v = in.v.data() + t0 * s.Hv * s.Dv;
  const float* g = in.g.data() + t0 * s.Hv;
  const float* b = in.beta.data() + t0 * s.Hv;
  float* o = out.data() + t0 * s.Hv * s.Dv;
  switch (form) {
    case Form::kRef:
      ref::GatedDelta(s, q, k, v, g, b, state.data(), o);
      break;
    case Form::kRecurrent:
      cpu::GatedDeltaRecurrent(s, q, k, v, g, b, state.data(), o, pool);
      break;
    case Form::kChunk:
      cpu::GatedDeltaChunk(s, q, k, v, g, b, state.data(), o, pool);
      break;
    case Form::kDispatch:
      cpu::GatedDelta(s, q, k, v, g, b, state.data(), o, pool);
      break;
  }
}

Result Run(Form form, const Inputs& in, ThreadPool& pool, std::vector<int64_t> splits = {}) {
  Result r;
  r.state = in.state;
  r.out.assign(in.shape.T * in.shape.Hv * in.shape.Dv, std::nanf(""));
  int64_t t0 = 0;
  splits.push_back(in.shape.T);
  for (int64_t t1 : splits) {
    RunRange(form, in, t0, t1, r.state, r.out, pool);
    t0 = t1;
  }
  return r;
}

using test::RelErr;

void CheckClose(const Result& got, const Result& want, double tol) {
  const double e_out = RelErr(got.out, want.out), e_state = RelErr(got.state, want.state);
  INFO("rel err out " << e_out << ", state " << e_state << ", tol " << tol);
  CHECK(e_out <= tol);
  CHECK(e_state <= tol);
}

TEST_CASE("ref::GatedDelta matches a hand-computed step", "[ref]") {
  // Dk = 2, Dv = 1, one token: S = [1, 2]^T, alpha = 0.5, k = [1, 0], beta = 0.5, v = 3, q = [1,
  // 1]. S <- 0.5 S = [0.5, 1]; r = 3 - 0.5 = 2.5; S += k * 0.5 * 2.5 = [1.75, 1]; o = 2.75.
  const GatedDeltaShape s{1, 1, 1, 2, 1};
  const float q[] = {1, 1}, k[] = {1, 0}, v[] = {3}, g[] = {std::log(0.5f)}, b[] = {0.5f};
  float state[] = {1, 2}, out[1];
  ref::GatedDelta(s, q, k, v, g, b, state, out);
  CHECK(out[0] == Approx(2.75f));
  CHECK(state[0] == Approx(1.75f));
  CHECK(state[1] == Approx(1.0f));
}

TEST_CASE("state layout is transposed: S[i][j] at j*Dk + i", "[ref]") {
  // Dk = 2, Dv = 2, zero state, no decay, beta = 1: S becomes k v^T, so S[i][j] = k[i] v[j]
  // and the stored element j*Dk + i must be k[i] * v[j].
  const GatedDeltaShape s{1, 1, 1, 2, 2};
  const float q[] = {0, 0}, k[] = {0.6f, 0.8f}, v[] = {2, 3}, g[] = {0}, b[] = {1};
  float state[4] = {0, 0, 0, 0}, out[2];
  ref::GatedDelta(s, q, k, v, g, b, state, out);
  CHECK(state[0 * 2 + 0] == Approx(0.6f * 2));  // S[0][0]
  CHECK(state[0 * 2 + 1] == Approx(0.8f * 2));  // S[1][0]
  CHECK(state[1 * 2 + 0] == Approx(0.6f * 3));  // S[0][1]
  CHECK(state[1 * 2 + 1] == Approx(0.8f * 3));  // S[1][1]
}

TEST_CASE("the three forms agree on outputs and final state", "[ref][cpu]") {
  ThreadPool pool(3);
  const std::vector<GatedDeltaShape> shapes = {
      {0, 2, 4, 32, 32},    // Hk != Hv
      {0, 2, 4, 128, 128},  // the real head dims
      {0, 3, 4, 33, 20},    // odd dims (SIMD tails), Hv not a multiple of Hk
      {0, 1, 2, 64, 48},
  };
  for (const auto& base : shapes) {
    for (int64_t T : {1, 2, 63, 64, 65, 130, 300}) {
      GatedDeltaShape s = base;
      s.T = T;
      const Inputs in = MakeInputs(s, uint32_t(1000 + T + 7 * s.Dk + s.Hv));
      const Result want = Run(Form::kRef, in, pool);
      for (Form f : {Form::kRecurrent, Form::kChunk, Form::kDispatch}) {
        INFO(FormName(f) << " T=" << T << " Hk=" << s.Hk << " Hv=" << s.Hv << " Dk=" << s.Dk
                         << " Dv=" << s.Dv);
        CheckClose(Run(f, in, pool), want, f == Form::kRecurrent ? kRecurrentTol : kChunkTol);
      }
    }
  }
}

TEST_CASE("thread count does not change the result", "[cpu]") {
  const GatedDeltaShape s{70, 2, 4, 128, 128};
  const Inputs in = MakeInputs(s, 42);
  ThreadPool one(1), four(4);
  for (Form f : {Form::kRecurrent, Form::kChunk}) {
    INFO(FormName(f));
    const Result a = Run(f, in, one), b = Run(f, in, four);
    CHECK(a.out == b.out);  // each head is computed by one thread in the same order
    CHECK(a.state == b.state);
  }
}

TEST_CASE("split invariance: T at once == uneven pieces carrying the state", "[ref][cpu]") {
  ThreadPool pool(2);
  for (const GatedDeltaShape s :
       {GatedDeltaShape{300, 2, 4, 32, 32}, GatedDeltaShape{150, 2, 4, 128, 128}}) {
    const Inputs in = MakeInputs(s, 7);
    for (Form f : {Form::kRef, Form::kRecurrent, Form::kChunk, Form::kDispatch}) {
      INFO(FormName(f) << " Dk=" << s.Dk);
      const Result whole = Run(f, in, pool);
      const Result pieces = Run(f, in, pool, {7, 71, 72, 140});  // 7, 64, 1, 68, rest
      if (f == Form::kChunk || f == Form::kDispatch) {
        // Chunk boundaries move, so sums are grouped differently.
        CheckClose(pieces, whole, kChunkTol);
      } else {
        // Per state column the operations are identical whatever the split.
        CHECK(pieces.out == whole.out);
        CHECK(pieces.state == whole.state);
      }
    }
  }
}

TEST_CASE("chunked prefill == feeding the tokens one at a time", "[cpu]") {
  // What the engine relies on: a prompt prefilled at once (chunked) and decoded token by token
  // (recurrent, T = 1 per call) give the same outputs and state.
  ThreadPool pool(2);
  const GatedDeltaShape s{140, 2, 4, 128, 128};
  const Inputs in = MakeInputs(s, 11);
  std::vector<int64_t> every_token;
  for (int64_t t = 1; t < s.T; ++t) every_token.push_back(t);
  CheckClose(Run(Form::kDispatch, in, pool), Run(Form::kDispatch, in, pool, every_token),
             kChunkTol);
}

TEST_CASE("extreme decays: strong (|gamma| > 600 within a chunk) and none", "[ref][cpu]") {
  // g down to -150 drives the cumulative log-decay of a chunk past the double-ratio range, so the
  // chunked form takes its exp(gamma_i - gamma_j) fallback; g = 0 everywhere is no decay at all.
  ThreadPool pool(2);
  const GatedDeltaShape s{150, 2, 4, 32, 32};
  Inputs strong = MakeInputs(s, 5), none = strong;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  for (auto& x : strong.g) x = uni(rng) < 0.5f ? -150.0f * uni(rng) : -0.01f * uni(rng);
  std::fill(none.g.begin(), none.g.end(), 0.0f);
  for (const Inputs* in : {&strong, &none}) {
    const Result want = Run(Form::kRef, *in, pool);
    CheckClose(Run(Form::kRecurrent, *in, pool), want, kRecurrentTol);
    CheckClose(Run(Form::kChunk, *in, pool), want, kChunkTol);
  }
}

TEST_CASE("value head h uses key head h % Hk (tiled), not h / (Hv / Hk)", "[ref][cpu]") {
  // Hk = 2, Hv = 4: tiled maps value heads 0,1,2,3 to key heads 0,1,0,1; grouped would give
  // 0,0,1,1. Each value head is recomputed alone (Hk = Hv = 1) with the key head chosen by each
  // rule.
  ThreadPool pool(2);
  const GatedDeltaShape s{20, 2, 4, 32, 16};
  const Inputs in = MakeInputs(s, 99);
  auto single_head = [&](int64_t h, int64_t hk) {
    Inputs one;
    one.shape = {s.T, 1, 1, s.Dk, s.Dv};
    for (int64_t t = 0; t < s.T; ++t) {
      const int64_t qk_off = (t * s.Hk + hk) * s.Dk, v_off = (t * s.Hv + h) * s.Dv;
      one.q.insert(one.q.end(), in.q.begin() + qk_off, in.q.begin() + qk_off + s.Dk);
      one.k.insert(one.k.end(), in.k.begin() + qk_off, in.k.begin() + qk_off + s.Dk);
      one.v.insert(one.v.end(), in.v.begin() + v_off, in.v.begin() + v_off + s.Dv);
      one.g.push_back(in.g[t * s.Hv + h]);
      one.beta.push_back(in.beta[t * s.Hv + h]);
    }
    one.state.assign(in.state.begin() + h * s.Dv * s.Dk, in.state.begin() + (h + 1) * s.Dv * s.Dk);
    return Run(Form::kRef, one, pool);
  };
  for (Form f : {Form::kRef, Form::kRecurrent, Form::kChunk}) {
    INFO(FormName(f));
    const Result all = Run(f, in, pool);
    for (int64_t h = 0; h < s.Hv; ++h) {
      INFO("value head " << h);
      Result mine;
      for (int64_t t = 0; t < s.T; ++t) {
        const float* o = all.out.data() + (t * s.Hv + h) * s.Dv;
        mine.out.insert(mine.out.end(), o, o + s.Dv);
      }
      mine.state.assign(all.state.begin() + h * s.Dv * s.Dk,
                        all.state.begin() + (h + 1) * s.Dv * s.Dk);
      CheckClose(mine, single_head(h, h % s.Hk), kChunkTol);
      const int64_t grouped = h / (s.Hv / s.Hk);
      if (grouped != h % s.Hk) {
        // The test can tell the two rules apart: the grouped head gives a clearly different answer.
        CHECK(RelErr(mine.out, single_head(h, grouped).out) > 0.01);
      }
    }
  }
}

TEST_CASE("steady-state cpu calls do not allocate", "[cpu]") {
  // The first call grows each worker's thread_local scratch; after that, nothing (the ThreadPool
  // dispatch included) may touch the heap, since these run once per layer per token.
  ThreadPool pool(3);
  const GatedDeltaShape s{130, 2, 4, 128, 128};
  const Inputs in = MakeInputs(s, 21);
  std::vector<float> state = in.state, out(s.T * s.Hv * s.Dv);
  auto run_all = [&] {
    cpu::GatedDeltaRecurrent(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                             state.data(), out.data(), pool);
    cpu::GatedDeltaChunk(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                         state.data(), out.data(), pool);
    cpu::GatedDelta(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                    state.data(), out.data(), pool);
  };
  run_all();
  const long before = g_allocations.load();
  run_all();
  run_all();
  CHECK(g_allocations.load() - before == 0);
}

TEST_CASE("T = 0 leaves the state unchanged; g = 0, beta = 0 tokens are no-ops", "[ref][cpu]") {
  ThreadPool pool(2);
  GatedDeltaShape s{0, 2, 4, 32, 32};
  Inputs in = MakeInputs({5, 2, 4, 32, 32}, 3);
  for (Form f : {Form::kRef, Form::kRecurrent, Form::kChunk}) {
    INFO(FormName(f));
    std::vector<float> state = in.state, out(1, 123.0f);
    RunRange(f, Inputs{s, in.q, in.k, in.v, in.g, in.beta, in.state}, 0, 0, state, out, pool);
    CHECK(state == in.state);
    CHECK(out[0] == 123.0f);
    // Padding tokens (g = 0, beta = 0) must not touch the state: this is what makes zero-padding
    // the last chunk exact.
    Inputs pad = in;
    std::fill(pad.g.begin(), pad.g.end(), 0.0f);
    std::fill(pad.beta.begin(), pad.beta.end(), 0.0f);
    const Result r = Run(f, pad, pool);
    CHECK(RelErr(r.state, in.state) <= 1e-6);
  }
}

}  // namespace
}  // namespace qwenrt
