// The turn planner: a chat request + what the session holds -> the prompt tokens of the turn and
// the checkpoint positions to take while prefilling them. This is the one checkpoint policy users
// run (docs/checkpoints.md): a checkpoint at the start of every message (`<|im_start|>`, so a
// change of system prompt, tools or a late message reuses what precedes it) and right after every
// `<|im_start|>assistant\n` (where a re-rendered history first differs from the tokens generated:
// the template drops the previous reply's reasoning). The Session adds its own near the end of
// every prefill (SessionParams::checkpoint_tail).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "chat/chat_model.h"
#include "chat/chat_state.h"
#include "chat/messages.h"

namespace qwenrt {

enum class HistoryMode {
  kTemplate,    // re-render the whole conversation every turn, exactly as the model was trained
  kTranscript,  // keep the exact tokens of earlier turns (reasoning included), append the new ones
};

struct TurnPlan {
  std::vector<int32_t> tokens;       // the whole prompt of this turn
  std::vector<int64_t> checkpoints;  // positions (sorted, unique) to snapshot while prefilling
};

// Errors: from rendering (Unsupported: no usable template; the template's own errors),
// InvalidArgument (the conversation renders to no tokens).
StatusOr<TurnPlan> PlanTurn(const ChatModel& model, const ChatRequest& request, HistoryMode history,
                            const ChatState& state, std::span<const int32_t> transcript);

// The checkpoint positions of the policy above for a rendered prompt.
std::vector<int64_t> ChatBoundaries(const Tokenizer& tokenizer, std::span<const int32_t> tokens);

int64_t CountAssistants(const std::vector<ChatMessage>& messages);

}  // namespace qwenrt
