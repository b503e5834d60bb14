// ChatState encoding (see chat_state.h).
#include "chat/chat_state.h"

#include <cstring>
#include <utility>

#include "chat/messages.h"

namespace qwenrt {
namespace {

constexpr uint32_t kVersion = 2;

void PutBytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);  // not insert(): GCC 12 warns of a false overflow in its inlined copy
  if (n > 0) std::memcpy(out.data() + at, p, n);
}

void PutString(std::vector<uint8_t>& out, const std::string& s) {
  const uint64_t n = s.size();
  PutBytes(out, &n, sizeof n);
  PutBytes(out, s.data(), s.size());
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  bool Bytes(void* p, size_t n) {
    if (b_.size() - at_ < n) return false;
    std::memcpy(p, b_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool String(std::string* s) {
    uint64_t n = 0;
    if (!Bytes(&n, sizeof n) || b_.size() - at_ < n) return false;
    s->assign(reinterpret_cast<const char*>(b_.data() + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return true;
  }
  bool AtEnd() const { return at_ == b_.size(); }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

}  // namespace

void ChatState::ClearReply() {
  reply_content.clear();
  reply_reasoning.clear();
  reply_tool_calls = "[]";
}

void ChatState::ClearHistory() {
  assistants_fed = transcript_assistants = transcript_reply_end = -1;
  tools = nullptr;
}

std::vector<uint8_t> EncodeChatState(const ChatState& s) {
  const std::string tools = s.tools.is_null() ? std::string() : s.tools.dump();
  std::vector<uint8_t> out;
  PutBytes(out, &kVersion, sizeof kVersion);
  PutString(out, s.reply_content);
  PutString(out, s.reply_reasoning);
  PutString(out, s.reply_tool_calls);
  const int64_t marks[3] = {s.assistants_fed, s.transcript_assistants, s.transcript_reply_end};
  PutBytes(out, marks, sizeof marks);
  PutString(out, tools);
  return out;
}

StatusOr<ChatState> DecodeChatState(std::span<const uint8_t> blob, int64_t n_tokens) {
  ChatState s;
  if (blob.empty()) return s;
  Reader r(blob);
  uint32_t version = 0;
  if (!r.Bytes(&version, sizeof version)) return BadFormat("session file: chat state truncated");
  if (version == 0 || version > kVersion) {
    return Unsupported("session file: chat state version {} (this library reads 1 and 2)", version);
  }
  int64_t marks[3];
  if (!r.String(&s.reply_content) || !r.String(&s.reply_reasoning) ||
      !r.String(&s.reply_tool_calls) || !r.Bytes(marks, sizeof marks)) {
    return BadFormat("session file: chat state truncated");
  }
  if (version >= 2) {
    std::string tools;
    if (!r.String(&tools)) return BadFormat("session file: chat state truncated");
    if (!tools.empty()) {
      StatusOr<Json> parsed = Json::Parse(tools, Json::Limits{kMaxJsonDepth, kMaxJsonObjectKeys});
      if (!parsed.ok() || !parsed->is_array())
        return BadFormat("session file: chat state tools are not a JSON array");
      s.tools = std::move(*parsed);
    }
  }
  if (!r.AtEnd()) return BadFormat("session file: trailing bytes after the chat state");
  if (marks[2] <= n_tokens && marks[0] >= -1 && marks[1] >= -1 && marks[2] >= -1) {
    s.assistants_fed = marks[0];
    s.transcript_assistants = marks[1];
    s.transcript_reply_end = marks[2];
  }
  return s;
}

}  // namespace qwenrt
