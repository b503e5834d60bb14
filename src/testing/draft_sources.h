// Draft sources for tests and benchmarks of speculative decoding (session/speculative.h), never
// reachable from the C ABI: an oracle that knows the target's greedy continuation and gets each
// draft right with a set probability (at no cost, or at the cost of a real draft source it wraps),
// and one that drafts random tokens.
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

// The oracle's tokens at a real draft source's cost: each Draft call first runs `inner` (the MTP
// head, MtpDraftSource) in full, then hands out as many of the oracle's tokens (OracleDraftSource's
// rule) as `inner` drafted, in place of its own. Accepted goes to both. A benchmark with it
// measures speculation with the head's real cost at a chosen acceptance (a random-weight file's
// head drafts are almost never right). `inner` must outlive this.
class CostedOracleDraftSource : public DraftSource {
 public:
  CostedOracleDraftSource(DraftSource* inner, std::vector<int32_t> truth, double acceptance,
                          uint32_t seed, int64_t n_vocab)
      : inner_(inner), oracle_(std::move(truth), acceptance, seed, n_vocab) {}
  Status Draft(const Session& session, int32_t next_token, int64_t k,
               std::vector<int32_t>* drafts) override;
  void Accepted(const Session& session, std::span<const int32_t> tokens) override;

  int64_t inner_drafts() const { return inner_drafts_; }  // tokens `inner` drafted so far

 private:
  DraftSource* inner_;
  OracleDraftSource oracle_;
  std::vector<int32_t> inner_tokens_;  // scratch: inner's drafts, thrown away
  int64_t inner_drafts_ = 0;
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
