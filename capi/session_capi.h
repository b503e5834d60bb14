// Helpers shared by the session and chat shims (session_capi.cpp, chat_capi.cpp): handle checks,
// cancellation bookkeeping, feeding with the report filled in, and the chat state kept in saved
// sessions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "handles.h"
#include "base/status.h"

namespace qwenrt::capi {

// INVALID_ARGUMENT unless `s` is a live session handle.
Status CheckSession(const qwenrt_session* s);

// A cancel requested while no call ran cancels the next call: consumes the flag and returns
// CANCELLED ("... `when`") if it is set.
Status TakeCancel(qwenrt_session* s, const char* when);

// Consumes the cancel flag when `status` is CANCELLED (the request was honoured); returns `status`.
Status FinishCancellable(qwenrt_session* s, Status status);

// Feeds `tokens` (prefix reuse), asking for checkpoints at the pending positions plus `boundaries`,
// and fills s->report / s->report_line (timings: the feed's wall time). Calls the log callback.
Status FeedTokens(qwenrt_session* s, std::span<const int32_t> tokens, std::span<const int64_t> boundaries,
                  FeedReport* fr);

// The trace line of a feed: "prefill 25 tokens from position 780 (checkpoint 780, common prefix 783 of 805)".
std::string FormatStepLine(const FeedReport& r);

// Updates the report's memory fields (checkpoints held, their bytes, state bytes) from the session.
void RefreshMemory(qwenrt_session* s);

// Forgets the last reply.
void ClearReply(qwenrt_session* s);

// The C-side state saved with a session (the last reply), as the Session's opaque sampler-state blob.
std::vector<uint8_t> EncodeChatState(const qwenrt_session& s);
// After a successful load: restores what EncodeChatState wrote (tolerating an empty blob) and
// resets the report, the pending checkpoint requests and the cancel flag.
void AfterLoad(qwenrt_session* s, const std::vector<uint8_t>& state);

}  // namespace qwenrt::capi
