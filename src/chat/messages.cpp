// Messages -> the JSON the chat template renders (see messages.h).
#include "chat/messages.h"

#include <utility>
#include <vector>

#include "text/jinja/jinja_value.h"

namespace qwenrt {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "user";
}

Status CheckJsonDepth(const nlohmann::ordered_json& value, std::string_view what, int max_depth) {
  if (jinja::JsonDepth(value, max_depth) > max_depth) {  // iterative: any depth is safe to measure
    return InvalidArgument("{} nests deeper than {} levels", what, max_depth);
  }
  return OkStatus();
}

namespace {
struct JsonLimitHit {
  std::string what;
};
}  // namespace

StatusOr<nlohmann::ordered_json> ParseRequestJson(std::string_view text, std::string_view what) {
  if (text.size() > kMaxJsonBytes) {
    return InvalidArgument("{} is {} bytes, more than the {} allowed", what, text.size(),
                           kMaxJsonBytes);
  }
  // Keys per open object and the nesting, counted as the (iterative) parser reports them; a limit
  // stops the parse at once (an exception out of the callback, caught here).
  std::vector<size_t> keys;
  using Json = nlohmann::ordered_json;
  Json::parser_callback_t limits = [&](int, Json::parse_event_t event, Json&) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        keys.push_back(0);
        if (keys.size() > static_cast<size_t>(kMaxJsonDepth)) {
          throw JsonLimitHit{fmt::format("{} nests deeper than {} levels", what, kMaxJsonDepth)};
        }
        break;
      case Json::parse_event_t::key:
        if (++keys.back() > kMaxJsonObjectKeys) {
          throw JsonLimitHit{
              fmt::format("{} has an object with more than {} keys", what, kMaxJsonObjectKeys)};
        }
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    Json out = Json::parse(text, limits, /*allow_exceptions=*/false);
    if (out.is_discarded()) return InvalidArgument("{} is not valid JSON", what);
    return out;
  } catch (const JsonLimitHit& hit) {
    return InvalidArgument("{}", hit.what);
  }
}

Status CheckRequestDepth(const ChatRequest& request) {
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(request.tools, "tools"));
  for (const ChatMessage& m : request.messages) {
    for (const ToolCall& c : m.tool_calls)
      QWENRT_RETURN_IF_ERROR(CheckJsonDepth(c.arguments, "tool call arguments"));
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
        calls.push_back(
            {{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      j["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace qwenrt
