// Messages -> the JSON the chat template renders (see messages.h).
#include "chat/messages.h"

#include <utility>
#include <vector>

namespace qwenrt {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

Status CheckJsonDepth(const nlohmann::ordered_json& value, std::string_view what, int max_depth) {
  std::vector<std::pair<const nlohmann::ordered_json*, int>> stack{{&value, 1}};
  while (!stack.empty()) {
    const auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    if (depth > max_depth) return InvalidArgument("{} nests deeper than {} levels", what, max_depth);
    for (const auto& child : *v) stack.emplace_back(&child, depth + 1);
  }
  return OkStatus();
}

Status CheckRequestDepth(const ChatRequest& request) {
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(request.tools, "tools"));
  for (const ChatMessage& m : request.messages) {
    for (const ToolCall& c : m.tool_calls) QWENRT_RETURN_IF_ERROR(CheckJsonDepth(c.arguments, "tool call arguments"));
  }
  return OkStatus();
}

nlohmann::ordered_json MessagesJson(const std::vector<ChatMessage>& messages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json j = {{"role", RoleName(m.role)}, {"content", m.content}};
    if (m.reasoning) j["reasoning_content"] = *m.reasoning;
    if (!m.tool_calls.empty()) {
      nlohmann::ordered_json calls = nlohmann::ordered_json::array();
      for (const ToolCall& c : m.tool_calls) {
        calls.push_back({{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      j["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace qwenrt
