// ChatState: what a chat session knows beyond its Session's tokens — the last reply as it was
// streamed, and the bookkeeping that lets transcript history extend the exact tokens of earlier
// turns. Saved in session files as the CHAT section (docs/session-format.md); the chat engine owns
// its encoding, the Session stores it opaquely.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "text/json.h"

namespace qwenrt {

struct ChatState {
  // The last generated reply, split as streamed.
  std::string reply_content;
  std::string reply_reasoning;
  std::string reply_tool_calls = "[]";  // JSON array
  // Assistant messages in the last chat fed (-1: the last feed was not a chat) and, after a reply
  // to it, how many assistant turns the transcript holds exactly and where the last reply ends in
  // it (-1: unknown, the next chat is rendered whole).
  int64_t assistants_fed = -1;
  int64_t transcript_assistants = -1;
  int64_t transcript_reply_end = -1;
  Json tools;  // tools of the last chat fed (types parsed tool-call arguments)

  void ClearReply();
  void ClearHistory();  // forgets the bookkeeping (the next chat is rendered whole)
};

// Encoding, little-endian: u32 version (2); three strings (u64 length + bytes): reply content,
// reasoning, tool calls; three i64 (assistants_fed, transcript_assistants, transcript_reply_end);
// one string: the tools JSON ("" = null).
std::vector<uint8_t> EncodeChatState(const ChatState& state);

// Decodes what EncodeChatState wrote, and version 1 (the same without the tools string: files
// saved before the chat engine moved into the core, whose SAMP section held it). An empty blob is
// an empty state. Errors: BadFormat (truncated, trailing bytes, bad JSON), Unsupported (a newer
// version). `n_tokens` (the session's length) bounds transcript_reply_end.
StatusOr<ChatState> DecodeChatState(std::span<const uint8_t> blob, int64_t n_tokens);

}  // namespace qwenrt
