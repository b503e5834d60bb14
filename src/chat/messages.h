// What a host sends each chat turn: the whole conversation (messages, tool definitions, thinking
// switch), the way the C ABI's `qwenrt_chat` does. The session reuses whatever prefix of the
// rendered prompt it already holds, so nothing here is incremental.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "text/jinja/jinja_value.h"
#include "text/json.h"

namespace qwenrt {

enum class Role { kSystem, kUser, kAssistant, kTool };
const char* RoleName(Role role);  // "system", "user", "assistant", "tool"

struct ToolCall {
  std::string name;
  Json arguments = Json::object();  // parameter -> value
};

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
  std::optional<std::string> reasoning;  // assistant only: rendered as `reasoning_content`
  std::vector<ToolCall> tool_calls;      // assistant only
};

struct ChatRequest {
  std::vector<ChatMessage> messages;  // the whole conversation so far
  Json tools = nullptr;               // OpenAI-format tool definitions (an array) or null
  bool enable_thinking = true;
  bool add_generation_prompt = true;  // end with "<|im_start|>assistant\n" (and "<think>\n")
};

// How deeply tool definitions and tool-call arguments may nest. Real schemas stay far below; the
// limit keeps every recursive step after it (copies, dumps, the template's value conversion) within
// a small, fixed stack.
inline constexpr int kMaxJsonDepth = 128;

// Parses caller JSON (tool definitions, tool-call arguments) within bounds that keep every later
// step fast and shallow: at most kMaxJsonBytes of text, kMaxJsonObjectKeys keys per object (an
// object finds its members by linear search), kMaxJsonDepth levels. InvalidArgument naming `what`.
inline constexpr size_t kMaxJsonBytes = size_t{1} << 20;
inline constexpr size_t kMaxJsonObjectKeys = 1024;
StatusOr<Json> ParseRequestJson(std::string_view text, std::string_view what);

// CheckJsonDepth (text/json.h) to kMaxJsonDepth over the request's tools and every tool call's
// arguments.
Status CheckRequestDepth(const ChatRequest& request);

// The messages as the chat template's `messages` variable: a list of dicts {role, content,
// reasoning_content?, tool_calls?}, built as template values directly (no JSON document, see
// ChatTemplate::RenderChat). Tool-call arguments deeper than `max_depth`: InvalidArgument.
StatusOr<jinja::Value> MessagesValue(const std::vector<ChatMessage>& messages, int max_depth);

}  // namespace qwenrt
