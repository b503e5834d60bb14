#include "testing/draft_sources.h"

#include <algorithm>

#include "session/session.h"

namespace qwenrt::testing {

Status OracleDraftSource::Draft(const Session& session, int32_t next_token, int64_t k,
                                std::vector<int32_t>* drafts) {
  (void)next_token;  // truth_[session.size()] when the session follows the truth
  std::bernoulli_distribution right(acceptance_);
  const int64_t p = session.size(), n = static_cast<int64_t>(truth_.size());
  for (int64_t m = 1; m <= k && p + m < n; ++m) {
    const int32_t t = truth_[static_cast<size_t>(p + m)];
    drafts->push_back(right(rng_) ? t : static_cast<int32_t>((t + 1) % n_vocab_));
  }
  return OkStatus();
}

void OracleDraftSource::Accepted(const Session& session, std::span<const int32_t> tokens) {
  (void)session;
  (void)tokens;
  ++accepted_calls_;
}

Status CostedOracleDraftSource::Draft(const Session& session, int32_t next_token, int64_t k,
                                      std::vector<int32_t>* drafts) {
  inner_tokens_.clear();
  QWENRT_RETURN_IF_ERROR(inner_->Draft(session, next_token, k, &inner_tokens_));
  const int64_t n = std::min<int64_t>(k, static_cast<int64_t>(inner_tokens_.size()));
  inner_drafts_ += n;
  return oracle_.Draft(session, next_token, n, drafts);
}

void CostedOracleDraftSource::Accepted(const Session& session, std::span<const int32_t> tokens) {
  inner_->Accepted(session, tokens);
  oracle_.Accepted(session, tokens);
}

Status RandomDraftSource::Draft(const Session& session, int32_t next_token, int64_t k,
                                std::vector<int32_t>* drafts) {
  (void)session;
  (void)next_token;
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab_ - 1));
  for (int64_t m = 0; m < k; ++m) drafts->push_back(d(rng_));
  return OkStatus();
}

}  // namespace qwenrt::testing
