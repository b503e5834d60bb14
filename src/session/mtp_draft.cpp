// MtpDraftSource (mtp_draft.h).
#include "session/mtp_draft.h"

namespace qwenrt {

Status MtpDraftSource::Draft(const Session& session, int32_t next_token, int k,
                             std::vector<int32_t>* drafts) {
  if (drafts == nullptr) return InvalidArgument("MtpDraftSource: null output");
  drafts->clear();
  if (!session.mtp_ready() || session.size() == 0 || k <= 0) return OkStatus();
  // See the header: the writes are to scratch rows only, so a const session is not changed in
  // anything its API reports (the DraftSource interface takes the session const).
  return const_cast<Session&>(session).DraftMtp(next_token, k, drafts);
}

}  // namespace qwenrt
