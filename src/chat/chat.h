// The chat layer: a conversation of messages driven on a Session. Each turn renders the prompt
// with the model's chat template (or, in transcript mode, appends only the new turn's tokens),
// feeds it with checkpoint positions at the turn boundaries, samples a reply and streams it,
// separating reasoning (`<think>…</think>`) from content and parsing `<tool_call>` blocks into
// structured calls (spec tokenizer-and-chat.md §6.5, §6.8, §7).
//
//   Conversation chat(session, tokenizer, tmpl, options);   // all three outlive `chat`
//   chat.AddUser("Hello");
//   QWENRT_ASSIGN_OR_RETURN(ChatReply r, chat.Reply(on_event));   // appends the assistant message
//
// History modes. `kTemplate` (default) re-renders the whole conversation every turn exactly as the
// model was trained (earlier replies lose their reasoning, contents are trimmed, …); the session's
// prefix resume restores the checkpoint taken before the previous `<|im_start|>assistant` header,
// so a turn prefills only the re-rendered previous reply and the new messages. `kTranscript` keeps
// the exact tokens the model saw and generated and appends only the new turn (maximal reuse, but
// the context differs from the template's: reasoning stays in the history).
//
// Thread safety: one thread at a time per Conversation (and its Session).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "chat/sampler.h"
#include "session/session.h"
#include "base/status.h"
#include "text/tokenizer.h"

namespace qwenrt {

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // parameter -> value
};

enum class Role { kSystem, kUser, kAssistant, kTool };
const char* RoleName(Role role);

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only
  std::vector<ToolCall> tool_calls;              // assistant only
};

enum class HistoryMode { kTemplate, kTranscript };

struct ChatOptions {
  HistoryMode history = HistoryMode::kTemplate;
  bool enable_thinking = true;
  // OpenAI-format tool definitions (a JSON array) or null. Parameter schemas type the parsed
  // arguments: "string" parameters are kept verbatim, others parsed as JSON.
  nlohmann::ordered_json tools = nullptr;
  SamplerParams sampling;
  int64_t max_tokens = 1024;                // per reply
  std::vector<std::string> stop_strings;    // end the reply when the text contains one
  // Mask the vocabulary's UNUSED padding entries (never produced by the tokenizer, untrained).
  bool ban_unused_tokens = true;
  FeedOptions feed;                          // cancel / progress for the prompt prefill
  bool keep_prompt_logits = false;           // copy the prompt's last logits into ChatReply
  const std::atomic<bool>* cancel = nullptr; // also checked during generation
};

// One piece of a streamed reply. `text` is valid only during the callback.
struct ChatEvent {
  enum class Kind { kReasoning, kContent, kToolCall };
  Kind kind;
  std::string_view text;           // kReasoning / kContent: the new text (complete UTF-8)
  const ToolCall* tool_call;       // kToolCall: the parsed call
};
// Returning false stops the reply after the current token.
using ChatCallback = std::function<bool(const ChatEvent&)>;

struct ChatReply {
  std::string content;                        // trimmed, without tool-call markup
  std::string reasoning_content;              // trimmed; empty when none
  std::vector<ToolCall> tool_calls;
  // "stop" (end-of-generation token), "length" (max_tokens), "stop_string", "cancelled"
  // (callback returned false or the cancel flag was set).
  std::string finish_reason;
  std::vector<int32_t> prompt_tokens;         // what was fed for this turn
  std::vector<int32_t> tokens;                // sampled, including a final EOG token
  std::vector<float> prompt_logits;           // [n_vocab] after the prompt, if keep_prompt_logits
  FeedReport feed_report;
  GenerateReport generate_report;
};

// Parses a reply as it streams (spec §6.8): text before `</think>` is reasoning (when the prompt
// opened a think block), then content; `<tool_call>…</tool_call>` blocks become ToolCalls (a
// `<tool_call>` also ends the reasoning). Leading and trailing whitespace of each part is
// withheld, so the streamed text equals the final trimmed fields. Markers split across pushes are
// recognised. Exposed for tests.
class ReplyParser {
 public:
  // `tools` (copied) types the tool-call arguments; null when there is no schema.
  ReplyParser(bool in_reasoning, nlohmann::ordered_json tools);
  // Feeds decoded text; calls `emit` for each event. Returns false if `emit` asked to stop.
  bool Push(std::string_view text, const ChatCallback& emit);
  // End of the reply: flushes held text (an unterminated tool call becomes content).
  bool Finish(const ChatCallback& emit);

  const std::string& content() const { return content_.text; }
  const std::string& reasoning() const { return reasoning_.text; }
  const std::vector<ToolCall>& tool_calls() const { return calls_; }

  // Parses the inside of one `<tool_call>…</tool_call>` block; nullopt if it is not
  // `<function=NAME>` + `<parameter=KEY>…</parameter>`* + `</function>`.
  static std::optional<ToolCall> ParseToolCall(std::string_view block, const nlohmann::ordered_json& tools);

 private:
  enum class State { kReasoning, kContent, kToolCall };
  // Whitespace-trimming accumulator of one part.
  struct Part {
    std::string text;
    std::string pending_ws;
    bool Append(std::string_view s, ChatEvent::Kind kind, const ChatCallback& emit);
  };
  bool Process(bool final, const ChatCallback& emit);

  State state_;
  nlohmann::ordered_json tools_;
  std::string held_;
  std::string call_text_;
  Part reasoning_, content_;
  std::vector<ToolCall> calls_;
};

class Conversation {
 public:
  // `session`, `tokenizer` and `tmpl` must outlive the Conversation. The session may be empty or
  // hold anything else (prefix resume reuses what matches). Errors: InvalidArgument for bad
  // sampling parameters, `tools` that is neither null nor an array, or a tokenizer whose
  // vocabulary is larger than the model's.
  static StatusOr<std::unique_ptr<Conversation>> Create(Session& session, const Tokenizer& tokenizer,
                                                        const ChatTemplate& tmpl, ChatOptions options);

  void Add(ChatMessage message) { messages_.push_back(std::move(message)); }
  void AddSystem(std::string content) { Add({Role::kSystem, std::move(content), std::nullopt, {}}); }
  void AddUser(std::string content) { Add({Role::kUser, std::move(content), std::nullopt, {}}); }
  void AddToolResult(std::string content) { Add({Role::kTool, std::move(content), std::nullopt, {}}); }

  // Renders the conversation with the generation prompt, as the next Reply would (template mode).
  StatusOr<std::string> RenderPrompt() const;
  // The tokens the next Reply feeds (depends on the history mode) and the checkpoint positions
  // it asks for: before every `<|im_start|>assistant` header and at the end of the prompt.
  Status BuildPrompt(std::vector<int32_t>* tokens, std::vector<int64_t>* checkpoints) const;

  // Generates the assistant's reply to the conversation so far, streaming it to `on_event` (may be
  // null), and appends it as an assistant message. Errors: from rendering (the template's own
  // message for an invalid conversation), InvalidArgument (tool arguments that are not objects),
  // and the Session's (ContextFull, Cancelled during the prefill, …); after an error the
  // conversation's messages are unchanged.
  StatusOr<ChatReply> Reply(const ChatCallback& on_event = nullptr);

  const std::vector<ChatMessage>& messages() const { return messages_; }
  const ChatOptions& options() const { return options_; }
  // Switches thinking on or off for the following replies.
  void set_enable_thinking(bool on) { options_.enable_thinking = on; }
  // The reply sampler (e.g. to save and restore its state with the session).
  Sampler& sampler() { return sampler_; }
  // Messages as the template's `messages` JSON.
  nlohmann::ordered_json MessagesJson() const;

 private:
  Conversation(Session& session, const Tokenizer& tokenizer, const ChatTemplate& tmpl, ChatOptions options,
               Sampler sampler);
  // Transcript mode: the text the template renders for the messages after the last reply.
  StatusOr<std::string> RenderNewTurn() const;

  Session& session_;
  const Tokenizer& tokenizer_;
  const ChatTemplate& tmpl_;
  ChatOptions options_;
  std::vector<ChatMessage> messages_;
  Sampler sampler_;
  std::vector<int32_t> assistant_header_;  // ids of "<|im_start|>assistant"
  // Transcript mode: the exact tokens the model holds after the last reply (empty before the
  // first) and how many messages they cover.
  std::vector<int32_t> transcript_;
  size_t transcript_messages_ = 0;
};

}  // namespace qwenrt
