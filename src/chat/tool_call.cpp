// Parsing tool-call blocks (see tool_call.h).
#include "chat/tool_call.h"

namespace qwenrt {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The JSON-schema type of a tool parameter ("" when unknown).
std::string ParameterType(const Json& tools, std::string_view function,
                          const std::string& parameter) {
  if (!tools.is_array()) return "";
  for (const auto& tool : tools) {
    if (!tool.is_object()) continue;
    const auto& fn = tool.contains("function") ? tool["function"] : tool;
    if (!fn.is_object()) continue;
    const auto name = fn.find("name");
    if (name == fn.end() || !name->is_string() || name->get<std::string>() != function) continue;
    const auto params = fn.find("parameters");
    if (params == fn.end() || !params->is_object()) return "";
    const auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    const auto prop = props->find(parameter);
    if (prop == props->end() || !prop->is_object()) return "";
    const auto type = prop->find("type");
    return type != prop->end() && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

// A parameter value as the template would have written it back.
Json ParseValue(std::string_view text, const std::string& type) {
  if (type == "string") return std::string(text);
  if (text == "True") return true;
  if (text == "False") return false;
  if (text == "None") return nullptr;
  // What the model wrote: kept as text unless it is JSON within the request bounds.
  StatusOr<Json> parsed = Json::Parse(text, Json::Limits{kMaxJsonDepth, kMaxJsonObjectKeys});
  if (!parsed.ok()) return std::string(text);
  return std::move(*parsed);
}

}  // namespace

std::optional<ToolCall> ParseToolCall(std::string_view block, const Json& tools) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParameter = "<parameter=", kParameterEnd = "</parameter>";
  std::string_view s = Trim(block);
  if (s.substr(0, kFunction.size()) != kFunction) return std::nullopt;
  s.remove_prefix(kFunction.size());
  const size_t close = s.find('>');
  if (close == std::string_view::npos || close == 0) return std::nullopt;
  ToolCall call;
  call.name = std::string(s.substr(0, close));
  if (call.name.find_first_of("<\n") != std::string::npos) return std::nullopt;
  s.remove_prefix(close + 1);
  while (true) {
    s = Trim(s);
    if (s == kFunctionEnd) return call;
    if (s.substr(0, kParameter.size()) != kParameter) return std::nullopt;
    s.remove_prefix(kParameter.size());
    const size_t key_end = s.find('>');
    if (key_end == std::string_view::npos || key_end == 0) return std::nullopt;
    const std::string key(s.substr(0, key_end));
    s.remove_prefix(key_end + 1);
    const size_t value_end = s.find(kParameterEnd);
    if (value_end == std::string_view::npos) return std::nullopt;
    std::string_view value = s.substr(0, value_end);
    // The template writes "<parameter=K>\nVALUE\n</parameter>": drop exactly those newlines.
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    call.arguments[key] = ParseValue(value, ParameterType(tools, call.name, key));
    s.remove_prefix(value_end + kParameterEnd.size());
  }
}

std::string ToolCallJson(std::string_view block, const Json& tools) {
  Json out = Json::object();
  if (std::optional<ToolCall> call = ParseToolCall(block, tools)) {
    out["name"] = call->name;
    out["arguments"] = call->arguments;
  } else {
    out["name"] = "";
    out["arguments"] = Json::object();
    out["raw"] = std::string(block);
  }
  return out.dump();  // invalid UTF-8 the model wrote comes out as U+FFFD
}

}  // namespace qwenrt
