// Causal depthwise conv + SiLU (ref::CausalConvSilu, cpu::CausalConvSilu): a hand-computed case,
// the conv-state layout and shift, cpu vs ref on outputs and state, and state carry (pieces ==
// one call), for T = 1, 2, 3, 7, 300 with Kc = 4, odd channel counts (SIMD tails) and the real
// width.
//
// Tolerance cpu vs ref: 1e-6 relative to max |y|. Same products and summation order (FMA
// contraction aside); the CPU exp is a polynomial with relative error < 2e-7 instead of libm's.
// The state is copied data and must match exactly.
#include "ops/conv.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "alloc_counter.h"
#include "base/thread_pool.h"
#include "test_util.h"

namespace qwenrt {
namespace {

constexpr double kTol = 1e-6;

struct Inputs {
  CausalConvShape shape;
  std::vector<float> x, w, state;
};

// x ~ N(0, 1) like the qkv projections; taps ~ N(0, 0.5); initial state ~ N(0, 1).
// `scale` widens the pre-activation range to exercise exp far from 0.
Inputs MakeInputs(const CausalConvShape& s, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Inputs in{s, std::vector<float>(s.T * s.C), std::vector<float>(s.C * s.Kc),
            std::vector<float>(s.C * (s.Kc - 1))};
  for (auto& v : in.x) v = normal(rng) * scale;
  for (auto& v : in.w) v = normal(rng) * 0.5f;
  for (auto& v : in.state) v = normal(rng) * scale;
  return in;
}

struct Result {
  std::vector<float> y, state;
};

// Runs tokens in pieces ending at each of `splits` (then at T), carrying the state.
Result Run(bool cpu, const Inputs& in, ThreadPool& pool, std::vector<int64_t> splits = {}) {
  Result r{std::vector<float>(in.shape.T * in.shape.C, std::nanf("")), in.state};
  splits.push_back(in.shape.T);
  int64_t t0 = 0;
  for (int64_t t1 : splits) {
    const CausalConvShape s{t1 - t0, in.shape.C, in.shape.Kc};
    const float* x = in.x.data() + t0 * s.C;
    float* y = r.y.data() + t0 * s.C;
    if (cpu) {
      cpu::CausalConvSilu(s, x, in.w.data(), r.state.data(), y, pool);
    } else {
      ref::CausalConvSilu(s, x, in.w.data(), r.state.data(), y);
    }
    t0 = t1;
  }
  return r;
}

using test::RelErr;

TEST_CASE("ref::CausalConvSilu matches a hand-computed token", "[ref]") {
  // One channel, Kc = 4: state (oldest first) = [1, -2, 0.5], taps [0.5, 0.25, -1, 2], x = 0.3.
  // u = 0.5*1 + 0.25*(-2) + (-1)*0.5 + 2*0.3 = 0.1; y = 0.1 / (1 + e^-0.1); state -> [-2, 0.5,
  // 0.3].
  ThreadPool pool(1);
  for (bool cpu : {false, true}) {
    INFO((cpu ? "cpu" : "ref"));
    const float x[] = {0.3f}, w[] = {0.5f, 0.25f, -1.0f, 2.0f};
    float state[] = {1.0f, -2.0f, 0.5f}, y[1];
    if (cpu) {
      cpu::CausalConvSilu({1, 1, 4}, x, w, state, y, pool);
    } else {
      ref::CausalConvSilu({1, 1, 4}, x, w, state, y);
    }
    CHECK(y[0] == Approx(0.1 / (1 + std::exp(-0.1))).epsilon(1e-6));
    CHECK(state[0] == -2.0f);
    CHECK(state[1] == 0.5f);
    CHECK(state[2] == 0.3f);
  }
}

TEST_CASE("conv state is [C, Kc-1], oldest first, holding raw inputs", "[ref][cpu]") {
  // Two channels, Kc = 4, T = 2: channel c's state [a, b, c] becomes [c, x0, x1].
  ThreadPool pool(2);
  for (bool cpu : {false, true}) {
    INFO((cpu ? "cpu" : "ref"));
    const float x[] = {1, 10, 2, 20};  // [T=2, C=2]
    const float w[] = {1, 1, 1, 1, 0, 0, 0, 1};
    float state[] = {-1, -2, -3, -10, -20, -30};  // channel 0: -1,-2,-3; channel 1: -10,-20,-30
    float y[4];
    if (cpu) {
      cpu::CausalConvSilu({2, 2, 4}, x, w, state, y, pool);
    } else {
      ref::CausalConvSilu({2, 2, 4}, x, w, state, y);
    }
    const std::vector<float> want_state = {-3, 1, 2, -30, 10, 20};
    CHECK(std::vector<float>(state, state + 6) == want_state);
    // Channel 0 sums its window: t0: -1-2-3+1 = -5; t1: -2-3+1+2 = -2. Channel 1 is the current x.
    auto silu = [](double u) { return u / (1 + std::exp(-u)); };
    CHECK(y[0] == Approx(silu(-5)).epsilon(1e-6));
    CHECK(y[2] == Approx(silu(-2)).epsilon(1e-6));
    CHECK(y[1] == Approx(silu(10)).epsilon(1e-6));
    CHECK(y[3] == Approx(silu(20)).epsilon(1e-6));
  }
}

TEST_CASE("cpu::CausalConvSilu matches ref on outputs and state", "[cpu]") {
  ThreadPool pool(3);
  for (int64_t C : {1, 37, 300, 8192}) {
    for (int64_t T : {1, 2, 3, 7, 300}) {
      if (C == 8192 && T == 300) continue;  // keep the test fast; T = 300 is covered at C = 300
      INFO("C=" << C << " T=" << T);
      const Inputs in = MakeInputs({T, C, 4}, uint32_t(T * 1000 + C));
      const Result want = Run(false, in, pool), got = Run(true, in, pool);
      CHECK(RelErr(got.y, want.y) <= kTol);
      CHECK(got.state == want.state);
    }
  }
}

TEST_CASE("cpu SiLU is accurate over a wide range of pre-activations", "[cpu]") {
  // Kc = 1 with unit taps makes u = x exactly, so this measures only the vector exp and division
  // (a real conv sum can cancel, which would make an element-wise relative error ill-conditioned).
  // x spans [-100, 100]: beyond |u| ~ 87 the vector exp clamps (saturated sigmoid).
  ThreadPool pool(2);
  const int64_t C = 1001;
  Inputs in{{2, C, 1}, std::vector<float>(2 * C), std::vector<float>(C, 1.0f), {}};
  for (int64_t i = 0; i < 2 * C; ++i) in.x[i] = -100.0f + 200.0f * float(i) / float(2 * C - 1);
  const Result want = Run(false, in, pool), got = Run(true, in, pool);
  double max_rel = 0;
  for (size_t i = 0; i < want.y.size(); ++i) {
    max_rel = std::max(max_rel, std::fabs(double(got.y[i]) - want.y[i]) /
                                    std::max(1e-30, std::fabs(double(want.y[i]))));
  }
  // For u < -87 the CPU exp saturates, giving y ~ -1e-36 where libm gives ~ -1e-36 or -0: that
  // absolute error is far below the 1e-30 floor of the denominator.
  INFO("max element-wise rel err " << max_rel);
  CHECK(max_rel <= 1e-6);
}

TEST_CASE("state carry: pieces == one call", "[ref][cpu]") {
  ThreadPool pool(2);
  const Inputs in = MakeInputs({300, 37, 4}, 5);
  for (bool cpu : {false, true}) {
    INFO((cpu ? "cpu" : "ref"));
    const Result whole = Run(cpu, in, pool);
    for (const std::vector<int64_t>& splits :
         {std::vector<int64_t>{1, 2, 3, 10, 17}, std::vector<int64_t>{7, 71, 72, 140},
          std::vector<int64_t>{2, 299}}) {
      const Result pieces = Run(cpu, in, pool, splits);
      CHECK(pieces.y == whole.y);  // identical arithmetic whatever the split
      CHECK(pieces.state == whole.state);
    }
    // One token at a time (decode).
    std::vector<int64_t> every;
    for (int64_t t = 1; t < 300; ++t) every.push_back(t);
    const Result steps = Run(cpu, in, pool, every);
    CHECK(steps.y == whole.y);
    CHECK(steps.state == whole.state);
  }
}

TEST_CASE("T = 0 leaves the state unchanged; other kernel sizes", "[ref][cpu]") {
  ThreadPool pool(2);
  const Inputs in = MakeInputs({5, 37, 4}, 9);
  std::vector<float> state = in.state, y(1, 5.0f);
  cpu::CausalConvSilu({0, 37, 4}, in.x.data(), in.w.data(), state.data(), y.data(), pool);
  ref::CausalConvSilu({0, 37, 4}, in.x.data(), in.w.data(), state.data(), y.data());
  CHECK(state == in.state);
  CHECK(y[0] == 5.0f);
  for (int64_t Kc : {1, 2, 3, 12}) {  // 12 takes the CPU's scalar path
    INFO("Kc=" << Kc);
    const Inputs k = MakeInputs({20, 37, Kc}, uint32_t(Kc));
    const Result want = Run(false, k, pool), got = Run(true, k, pool, {3});
    CHECK(RelErr(got.y, want.y) <= kTol);
    CHECK(got.state == want.state);
  }
}

TEST_CASE("cpu::CausalConvSilu does not allocate", "[cpu]") {
  ThreadPool pool(3);
  const Inputs in = MakeInputs({7, 8192, 4}, 12);
  std::vector<float> state = in.state, y(in.x.size());
  const long before = g_allocations.load();
  for (int i = 0; i < 3; ++i) {
    cpu::CausalConvSilu(in.shape, in.x.data(), in.w.data(), state.data(), y.data(), pool);
  }
  CHECK(g_allocations.load() - before == 0);
}

}  // namespace
}  // namespace qwenrt
