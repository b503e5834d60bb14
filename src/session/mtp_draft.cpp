// MtpDraftSource (mtp_draft.h).
#include "session/mtp_draft.h"

#include <algorithm>

namespace qwenrt {

Status MtpDraftSource::Draft(const Session& session, int32_t next_token, int64_t k,
                             std::vector<int32_t>* drafts) {
  if (drafts == nullptr) return InvalidArgument("MtpDraftSource: null output");
  drafts->clear();
  if (!session.mtp_ready() || session.size() == 0 || k <= 0) return OkStatus();
  // See the header: the writes are to scratch rows only, so a const session is not changed in
  // anything its API reports (the DraftSource interface takes the session const).
  return const_cast<Session&>(session).DraftMtp(next_token,
                                                static_cast<int>(std::min<int64_t>(k, 64)), drafts);
}

}  // namespace qwenrt
