// Prompt tokens and checkpoint positions of a chat turn (see turn_planner.h).
#include "chat/turn_planner.h"

#include <optional>
#include <string>
#include <string_view>

namespace qwenrt {
namespace {

// Transcript history: the exact tokens of the earlier turns (prompt and generated reply, as the
// session holds them), the end token of the last reply, then what the template renders for the
// messages after that reply. nullopt when the session holds no chat reply to extend or the
// conversation does not continue it (then the whole conversation is rendered instead).
std::optional<std::vector<int32_t>> TranscriptPrompt(const Tokenizer& tok,
                                                     const ChatRequest& request,
                                                     const ChatState& state,
                                                     std::span<const int32_t> transcript,
                                                     std::string_view full) {
  const int64_t n = static_cast<int64_t>(transcript.size());
  if (state.transcript_assistants < 0 || state.transcript_reply_end <= 0 ||
      state.transcript_reply_end > n ||
      CountAssistants(request.messages) < state.transcript_assistants) {
    return std::nullopt;
  }
  constexpr std::string_view kHeader = "<|im_start|>assistant", kEnd = "<|im_end|>\n";
  size_t pos = 0;
  for (int64_t k = 0; k < state.transcript_assistants; ++k) {
    pos = full.find(kHeader, pos);
    if (pos == std::string_view::npos) return std::nullopt;
    pos += kHeader.size();
  }
  pos = full.find(kEnd, pos);
  if (pos == std::string_view::npos) return std::nullopt;
  std::vector<int32_t> tokens(transcript.begin(), transcript.begin() + state.transcript_reply_end);
  tok.Encode(kEnd, SpecialTokens::kAll, &tokens);  // the reply's end token was sampled, not fed
  tok.Encode(full.substr(pos + kEnd.size()), SpecialTokens::kAll, &tokens);
  return tokens;
}

}  // namespace

int64_t CountAssistants(const std::vector<ChatMessage>& messages) {
  int64_t n = 0;
  for (const ChatMessage& m : messages) n += m.role == Role::kAssistant;
  return n;
}

std::vector<int64_t> ChatBoundaries(const Tokenizer& tok, std::span<const int32_t> tokens) {
  std::vector<int64_t> out;
  const int32_t im_start = tok.special_ids().im_start;
  if (im_start < 0) return out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != im_start) continue;
    if (i > 0) out.push_back(static_cast<int64_t>(i));
    // The role line: tokens up to the first one whose text ends with a newline.
    std::string role;
    for (size_t j = i + 1; j < tokens.size() && j < i + 16; ++j) {
      role.append(tok.TokenToPiece(tokens[j]));
      if (!role.empty() && role.back() == '\n') {
        if (role == "assistant\n") out.push_back(static_cast<int64_t>(j + 1));
        break;
      }
    }
  }
  return out;
}

StatusOr<TurnPlan> PlanTurn(const ChatModel& model, const ChatRequest& request, HistoryMode history,
                            const ChatState& state, std::span<const int32_t> transcript) {
  if (!request.tools.is_null() && !request.tools.is_array()) {
    return InvalidArgument("chat: tools must be a JSON array or null");
  }
  QWENRT_ASSIGN_OR_RETURN(std::string text, model.Render(request));
  const Tokenizer& tok = model.tokenizer();
  TurnPlan plan;
  if (history == HistoryMode::kTranscript) {
    if (auto t = TranscriptPrompt(tok, request, state, transcript, text))
      plan.tokens = std::move(*t);
  }
  if (plan.tokens.empty()) tok.Encode(text, SpecialTokens::kAll, &plan.tokens);
  if (plan.tokens.empty()) return InvalidArgument("the conversation renders to no tokens");
  plan.checkpoints = ChatBoundaries(tok, plan.tokens);
  return plan;
}

}  // namespace qwenrt
