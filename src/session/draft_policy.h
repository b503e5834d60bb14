// DraftLengthPolicy: how many drafts the next verify pass checks, 0 to a maximum, chosen per
// session from what speculation has paid there so far (docs/speculative.md, "Adaptive draft
// length").
//
// A pass with k drafts emits E(k) = 1 + a + a^2 + ... + a^k tokens on average when each draft is
// right with probability a (independently, given the ones before it were), and costs c(k)
// milliseconds (drafting plus the verify pass, measured). The policy picks the k with the most
// tokens per millisecond, E(k) / c(k): at low acceptance, or where a pass of 1 + k tokens costs
// nearly k + 1 steps (a model small enough to be compute-bound, a long context, a loaded machine),
// that is k = 0, plain decoding. The choice never changes what is emitted (every k gives the
// tokens of plain decoding), only how fast.
//
// a is estimated from decayed counts of checked and accepted drafts (a draft is checked when every
// draft before it was accepted; the maximum-likelihood rate of a geometric run), c(k) is an
// exponential moving average per k, and unmeasured k are interpolated linearly between measured
// ones (extrapolated from the last two). It starts with one pass at the maximum and one at 0, so
// both ends are measured; while it sits at 0 it probes one draft every kProbeEvery passes, so a
// change in acceptance is seen.
#pragma once

#include <array>
#include <cstdint>

#include "session/session.h"

namespace qwenrt {

class DraftLengthPolicy {
 public:
  static constexpr int64_t kProbeEvery = 16;

  explicit DraftLengthPolicy(int64_t max_draft);

  int64_t max_draft() const { return max_; }
  // Drafts for the next pass, in [0, max_draft].
  int64_t Next() const;
  // The pass just run: k drafts asked for, `checked` of them checked (the verify pass stops at the
  // first wrong one; the rest were never looked at), `accepted` right, `ms` for drafting and
  // verifying.
  void Record(int64_t k, int64_t checked, int64_t accepted, double ms);

  double acceptance() const { return accepted_ / checked_; }  // the current estimate of a
  // The estimated cost of a pass with k drafts (measured, interpolated or extrapolated); 0 before
  // any pass.
  double CostMs(int64_t k) const;

 private:
  int64_t max_;
  std::array<double, kMaxVerifyDraft + 1> cost_ms_{};  // moving average per k; 0 = not measured
  double accepted_ = 2.0, checked_ = 3.0;  // decayed counts; prior: two of three drafts right
  int64_t passes_ = 0;
  int64_t zero_run_ = 0;  // passes in a row at k = 0
};

}  // namespace qwenrt
