// MtpDraftSource: the draft source of speculative decoding backed by the model's own MTP (next-n)
// head (docs/mtp.md). It drafts greedily from the session's MTP state, which the session keeps in
// step with its trunk when created with SessionParams::mtp.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "session/session.h"
#include "session/speculative.h"

namespace qwenrt {

class MtpDraftSource : public DraftSource {
 public:
  // Up to k drafts of the tokens after `next_token` (the target's pick to follow the transcript):
  // fewer near the end of the context, none (OK) when the session keeps no valid MTP state
  // (Session::mtp_ready()), so a caller simply decodes without speculation there.
  // The session is taken const as the DraftSource interface does: drafting writes only the MTP
  // head's scratch rows past its valid prefix (and may make KV pages for them), nothing a caller
  // can observe through Session's API but kv_bytes(). Errors: Session::DraftMtp's.
  Status Draft(const Session& session, int32_t next_token, int64_t k,
               std::vector<int32_t>* drafts) override;
};

}  // namespace qwenrt
