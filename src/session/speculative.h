// Speculative decoding: the interface a draft model implements (the MTP head, or the test and
// benchmark sources of src/testing/draft_sources.h) and what Session::Generate asks of it. The
// verify pass itself is Session::Verify (session.h, speculative.cpp); docs/speculative.md has the
// design and the exactness argument.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace qwenrt {

class Session;

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Up to `k` tokens expected to follow `next_token`, which `session` evaluates next (at position
  // session.size()). Fewer, or none, is fine: a draft only costs its share of the verify pass.
  // Drafts outside the vocabulary are cut off there. An error ends the Generate call with it (the
  // sampled `next_token` is then in its output but not evaluated, as for any decode error).
  virtual Status Draft(const Session& session, int32_t next_token, int64_t k,
                       std::vector<int32_t>* drafts) = 0;
  // After each verify pass: `tokens` (next_token and the accepted drafts) are now the end of the
  // session's transcript. A source that keeps state in step with the session (the MTP head's own
  // KV) advances it here; rejected drafts never reached the session.
  virtual void Accepted(const Session& session, std::span<const int32_t> tokens) {
    (void)session;
    (void)tokens;
  }
};

}  // namespace qwenrt
