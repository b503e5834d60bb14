// What a host sends each chat turn: the whole conversation (messages, tool definitions, thinking
// switch), the way the C ABI's `qwenrt_chat` does. The session reuses whatever prefix of the
// rendered prompt it already holds, so nothing here is incremental.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwenrt {

enum class Role { kSystem, kUser, kAssistant, kTool };
const char* RoleName(Role role);  // "system", "user", "assistant", "tool"

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // parameter -> value
};

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
  std::optional<std::string> reasoning;  // assistant only: rendered as `reasoning_content`
  std::vector<ToolCall> tool_calls;      // assistant only
};

struct ChatRequest {
  std::vector<ChatMessage> messages;      // the whole conversation so far
  nlohmann::ordered_json tools = nullptr;  // OpenAI-format tool definitions (an array) or null
  bool enable_thinking = true;
  bool add_generation_prompt = true;      // end with "<|im_start|>assistant\n" (and "<think>\n")
};

// The messages as the chat template's `messages` variable.
nlohmann::ordered_json MessagesJson(const std::vector<ChatMessage>& messages);

}  // namespace qwenrt
