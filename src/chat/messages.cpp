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
        const nlohmann::ordered_json* args = &c.arguments;
        nlohmann::ordered_json parsed;
        if (args->is_string()) {
          parsed = nlohmann::ordered_json::parse(args->get_ref<const std::string&>(), nullptr,
                                                 /*allow_exceptions=*/false);
          if (parsed.is_object()) args = &parsed;
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
