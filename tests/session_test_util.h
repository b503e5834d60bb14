// Helpers shared by the session tests (session_test, forward_cuda_test): random prompts, sessions
// that fail the test case when they cannot be made, greedy argmax, logits copies.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "session/session.h"

namespace qwenrt::test {

// n token ids uniform in [0, vocab), reproducible from `seed`.
inline std::vector<int32_t> RandomTokens(int64_t n, uint32_t seed, int64_t vocab = 512) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = d(rng);
  return out;
}

// Parameters for test sessions: one thread, small ubatches (so prefills cross ubatch boundaries).
inline SessionParams TestParams(BackendKind kind, int64_t ubatch = 64) {
  SessionParams p;
  p.backend = kind;
  p.n_threads = 1;
  p.ubatch = ubatch;
  return p;
}

inline std::unique_ptr<Session> NewSession(std::shared_ptr<const Model> m, const SessionParams& p) {
  auto s = Session::Create(std::move(m), p);
  if (!s.ok()) FAIL(s.status().ToString());
  return std::move(s).value();
}

inline int32_t Argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

inline std::vector<float> Copy(std::span<const float> x) {
  return std::vector<float>(x.begin(), x.end());
}

}  // namespace qwenrt::test
