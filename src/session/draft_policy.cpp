#include "session/draft_policy.h"

#include <algorithm>

namespace qwenrt {
namespace {

// Each pass with drafts weighs the counts before it by this: about the last 20 passes decide.
constexpr double kDecay = 0.95;
// Weight of a new cost sample in the moving average.
constexpr double kCostWeight = 0.25;

// Tokens a pass of k drafts emits on average at per-draft acceptance a: 1 + a + ... + a^k.
double ExpectedTokens(double a, int64_t k) {
  double e = 1, p = 1;
  for (int64_t i = 0; i < k; ++i) e += (p *= a);
  return e;
}

}  // namespace

DraftLengthPolicy::DraftLengthPolicy(int64_t max_draft)
    : max_(std::clamp<int64_t>(max_draft, 0, kMaxVerifyDraft)) {}

double DraftLengthPolicy::CostMs(int64_t k) const {
  k = std::clamp<int64_t>(k, 0, max_);
  if (cost_ms_[static_cast<size_t>(k)] > 0) return cost_ms_[static_cast<size_t>(k)];
  int64_t lo = -1, hi = -1;  // nearest measured below and above k
  for (int64_t j = k - 1; j >= 0 && lo < 0; --j)
    if (cost_ms_[static_cast<size_t>(j)] > 0) lo = j;
  for (int64_t j = k + 1; j <= max_ && hi < 0; ++j)
    if (cost_ms_[static_cast<size_t>(j)] > 0) hi = j;
  const auto c = [&](int64_t j) { return cost_ms_[static_cast<size_t>(j)]; };
  if (lo >= 0 && hi >= 0)
    return c(lo) + (c(hi) - c(lo)) * static_cast<double>(k - lo) / static_cast<double>(hi - lo);
  const int64_t near = lo >= 0 ? lo : hi;
  if (near < 0) return 0;
  // One side only: the slope of the two nearest measured points on that side, or none.
  int64_t other = -1;
  for (int64_t j = lo >= 0 ? near - 1 : near + 1; j >= 0 && j <= max_ && other < 0;
       j += lo >= 0 ? -1 : 1)
    if (c(j) > 0) other = j;
  if (other < 0) return c(near);
  const double slope = (c(near) - c(other)) / static_cast<double>(near - other);
  return std::max(c(near) + slope * static_cast<double>(k - near), 1e-9);
}

int64_t DraftLengthPolicy::Next() const {
  if (max_ == 0) return 0;
  if (passes_ == 0) return max_;   // measure the full draft first
  if (cost_ms_[0] <= 0) return 0;  // then one plain pass
  const double a = acceptance();
  int64_t best = 0;
  double best_rate = 0;
  for (int64_t k = 0; k <= max_; ++k) {
    const double cost = CostMs(k);
    if (cost <= 0) continue;
    const double rate = ExpectedTokens(a, k) / cost;
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  if (best == 0 && zero_run_ >= kProbeEvery) return 1;  // see whether drafts got better
  return best;
}

void DraftLengthPolicy::Record(int64_t k, int64_t checked, int64_t accepted, double ms) {
  ++passes_;
  zero_run_ = k == 0 ? zero_run_ + 1 : 0;
  if (k < 0 || k > max_ || !(ms > 0)) return;
  double& c = cost_ms_[static_cast<size_t>(k)];
  c = c > 0 ? (1 - kCostWeight) * c + kCostWeight * ms : ms;
  if (checked > 0) {
    accepted_ = kDecay * accepted_ + static_cast<double>(accepted);
    checked_ = kDecay * checked_ + static_cast<double>(checked);
  }
}

}  // namespace qwenrt
