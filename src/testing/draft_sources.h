// Draft sources for tests and benchmarks of speculative decoding (session/speculative.h), never
// reachable from the C ABI: an oracle that knows the target's greedy continuation and gets each
// draft right with a set probability, and one that drafts random tokens.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "session/speculative.h"

namespace qwenrt::testing {

// Drafts truth[p+1 .. p+k] for a session about to evaluate position p, each one right with
// probability `acceptance` and otherwise replaced by a token the target will not choose
// ((truth + 1) mod V), independently, reproducibly from `seed`. `truth` is the whole sequence the
// target produces greedily (prompt + continuation), computed beforehand; past its end nothing is
// drafted. Costs nothing, so a benchmark with it measures the verify machinery alone.
class OracleDraftSource : public DraftSource {
 public:
  OracleDraftSource(std::vector<int32_t> truth, double acceptance, uint32_t seed, int64_t n_vocab)
      : truth_(std::move(truth)), acceptance_(acceptance), rng_(seed), n_vocab_(n_vocab) {}
  Status Draft(const Session& session, int32_t next_token, int64_t k,
               std::vector<int32_t>* drafts) override;
  void Accepted(const Session& session, std::span<const int32_t> tokens) override;

  int64_t accepted_calls() const { return accepted_calls_; }  // Accepted() calls so far

 private:
  std::vector<int32_t> truth_;
  double acceptance_;
  std::mt19937 rng_;
  int64_t n_vocab_;
  int64_t accepted_calls_ = 0;
};

// k tokens uniform in [0, n_vocab), reproducible from `seed`: almost never accepted by a real
// model, a worst case for the verify pass.
class RandomDraftSource : public DraftSource {
 public:
  RandomDraftSource(uint32_t seed, int64_t n_vocab) : rng_(seed), n_vocab_(n_vocab) {}
  Status Draft(const Session& session, int32_t next_token, int64_t k,
               std::vector<int32_t>* drafts) override;

 private:
  std::mt19937 rng_;
  int64_t n_vocab_;
};

}  // namespace qwenrt::testing
