// DraftLengthPolicy (session/draft_policy.h): the draft length that gives the most tokens per
// millisecond for the acceptance and pass costs it has seen, 0 when speculation does not pay, a
// probe now and then at 0; and, through Session::Generate, output bit for bit plain decoding's.
#include "session/draft_policy.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

namespace qwenrt::test {
namespace {

// Runs `passes` simulated passes: each draft right with probability `a`; a pass of k drafts costs
// base + k * per_draft ms. Returns how often each k was chosen over the last half.
std::vector<int> Simulate(DraftLengthPolicy& p, double a, double base, double per_draft, int passes,
                          uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution right(a);
  std::vector<int> chosen(static_cast<size_t>(p.max_draft() + 1), 0);
  for (int i = 0; i < passes; ++i) {
    const int64_t k = p.Next();
    REQUIRE(k >= 0);
    REQUIRE(k <= p.max_draft());
    int64_t accepted = 0;
    while (accepted < k && right(rng)) ++accepted;
    const int64_t checked = std::min(accepted + 1, k);
    p.Record(k, checked, accepted, base + per_draft * static_cast<double>(k));
    if (i >= passes / 2) ++chosen[static_cast<size_t>(k)];
  }
  return chosen;
}

int MostChosen(const std::vector<int>& chosen) {
  return static_cast<int>(std::max_element(chosen.begin(), chosen.end()) - chosen.begin());
}

TEST_CASE("draft policy: starts with the maximum, then one plain pass", "[draft_policy]") {
  DraftLengthPolicy p(3);
  CHECK(p.Next() == 3);
  p.Record(3, 1, 0, 2.0);
  CHECK(p.Next() == 0);
  p.Record(0, 0, 0, 1.0);
  CHECK(p.CostMs(0) == 1.0);
  CHECK(p.CostMs(3) == 2.0);
  CHECK(std::fabs(p.CostMs(1) - 4.0 / 3.0) < 1e-12);  // interpolated
}

TEST_CASE("draft policy: cheap drafts that are right: the maximum", "[draft_policy]") {
  DraftLengthPolicy p(4);
  // Memory-bound: a pass of 1 + k costs little more than one step.
  const auto chosen = Simulate(p, 0.9, 10.0, 0.5, 400);
  CHECK(MostChosen(chosen) == 4);
  CHECK(p.acceptance() > 0.8);
}

TEST_CASE("draft policy: drafts that are never right: plain decoding, with probes",
          "[draft_policy]") {
  DraftLengthPolicy p(3);
  const auto chosen = Simulate(p, 0.0, 10.0, 3.0, 400);
  CHECK(MostChosen(chosen) == 0);
  // At 0 it probes one draft every kProbeEvery passes, no more.
  CHECK(chosen[1] >= 200 / (DraftLengthPolicy::kProbeEvery + 1) - 1);
  CHECK(chosen[1] <= 200 / DraftLengthPolicy::kProbeEvery + 1);
  CHECK(chosen[2] == 0);
  CHECK(chosen[3] == 0);
}

TEST_CASE("draft policy: compute-bound passes at moderate acceptance: plain decoding",
          "[draft_policy]") {
  // A pass of 1 + k costs k + 1 steps: no k emits more tokens per millisecond than 0.
  DraftLengthPolicy p(3);
  CHECK(MostChosen(Simulate(p, 0.6, 1.0, 1.0, 400)) == 0);
}

TEST_CASE("draft policy: in between, a short draft", "[draft_policy]") {
  // Each draft adds 40% of a step: at a = 0.7, k = 1 gives 1.7/1.4 = 1.21 tokens per step, k = 2
  // 2.19/1.8 = 1.22, k = 3 2.53/2.2 = 1.15, k = 0 1.
  DraftLengthPolicy p(3);
  const int k = MostChosen(Simulate(p, 0.7, 1.0, 0.4, 600));
  CHECK(k >= 1);
  CHECK(k <= 2);
}

TEST_CASE("draft policy: follows a change in acceptance", "[draft_policy]") {
  DraftLengthPolicy p(3);
  CHECK(MostChosen(Simulate(p, 0.0, 10.0, 1.0, 300)) == 0);
  CHECK(MostChosen(Simulate(p, 0.95, 10.0, 1.0, 600, 2)) == 3);
}

TEST_CASE("draft policy: max_draft 0 never drafts; out-of-range k is ignored", "[draft_policy]") {
  DraftLengthPolicy p(0);
  CHECK(p.Next() == 0);
  p.Record(5, 5, 5, 1.0);
  CHECK(p.Next() == 0);
  DraftLengthPolicy q(2);
  q.Record(7, 7, 7, 1.0);   // not a length this policy chooses: no cost recorded
  q.Record(2, 1, 1, -1.0);  // no time measured: ignored
  CHECK(q.CostMs(2) == 0);
}

}  // namespace
}  // namespace qwenrt::test
