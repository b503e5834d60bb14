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

StatusOr<Json> ParseRequestJson(std::string_view text, std::string_view what) {
  if (text.size() > kMaxJsonBytes) {
    return InvalidArgument("{} is {} bytes, more than the {} allowed", what, text.size(),
                           kMaxJsonBytes);
  }
  return Json::Parse(text, Json::Limits{kMaxJsonDepth, kMaxJsonObjectKeys}, what);
}

Status CheckRequestDepth(const ChatRequest& request) {
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(request.tools, kMaxJsonDepth, "tools"));
  for (const ChatMessage& m : request.messages) {
    for (const ToolCall& c : m.tool_calls)
      QWENRT_RETURN_IF_ERROR(CheckJsonDepth(c.arguments, kMaxJsonDepth, "tool call arguments"));
  }
  return OkStatus();
}

StatusOr<jinja::Value> MessagesValue(const std::vector<ChatMessage>& messages, int max_depth) {
  using jinja::Value;
  const auto str = [](std::string_view s) { return Value::String(std::string(s)); };
  std::vector<Value> out;
  out.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::Dict msg;
    msg.items.reserve(4);
    msg.items.emplace_back(str("role"), str(RoleName(m.role)));
    msg.items.emplace_back(str("content"), str(m.content));
    if (m.reasoning) msg.items.emplace_back(str("reasoning_content"), str(*m.reasoning));
    if (!m.tool_calls.empty()) {
      std::vector<Value> calls;
      calls.reserve(m.tool_calls.size());
      for (const ToolCall& c : m.tool_calls) {
        // Arguments given as a JSON string (OpenAI wire format) that parse as an object are that
        // object, as ChatTemplate::RenderChat does for JSON messages.
        const Json* args = &c.arguments;
        StatusOr<Json> parsed = Json();
        if (args->is_string()) {
          bool too_deep = false;
          parsed =
              Json::Parse(args->str(), Json::Limits{max_depth}, "tool call arguments", &too_deep);
          if (too_deep) return parsed.status();
          if (parsed.ok() && parsed->is_object()) args = &*parsed;
        }
        QWENRT_ASSIGN_OR_RETURN(Value arguments, jinja::FromJson(*args, max_depth));
        jinja::Dict fn;
        fn.items.emplace_back(str("name"), str(c.name));
        fn.items.emplace_back(str("arguments"), std::move(arguments));
        jinja::Dict call;
        call.items.emplace_back(str("type"), str("function"));
        call.items.emplace_back(str("function"), Value::MakeDict(std::move(fn)));
        calls.push_back(Value::MakeDict(std::move(call)));
      }
      msg.items.emplace_back(str("tool_calls"), Value::MakeList(std::move(calls)));
    }
    out.push_back(Value::MakeDict(std::move(msg)));
  }
  return Value::MakeList(std::move(out));
}

}  // namespace qwenrt
